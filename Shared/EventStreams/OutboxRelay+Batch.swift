import ChannelSupport
import Postgres
import Redis

extension OutboxRelay {
    /// Moves one batch in one transaction of two round trips (the deletion, then the commit, with
    /// the `XADD` pipeline between them).
    func relayBatch() async throws -> RelayedBatch {
        let schema = schema
        let redis = redis
        let batchSize = options.batchSize
        let statements = statements
        let preparation = preparation
        return try await postgres.transaction { connection in
            // One round trip (with the transaction's BEGIN): take the relay's turn, then take and
            // delete the oldest rows (by their ids: an `IN` would join against a scan of the whole
            // table, dead rows and all). Without the turn the scan is empty. The deletion only commits
            // once Redis has the events, so a failure below brings the rows back.
            let rows = try await connection.query(statements.takeBatch, [statements.lockKey, batchSize])
            guard !rows.isEmpty else { return RelayedBatch(rows: 0, topics: []) }
            var events: [Event] = []
            events.reserveCapacity(rows.count)
            for row in rows {
                events.append(
                    Event(
                        id: try row.decode(Int64.self, at: 0), topic: try row.decode(String.self, at: 1),
                        type: try row.decode(String.self, at: 2), payload: try row.decode(String.self, at: 3)))
            }
            // RETURNING follows no order: the streams get the events in outbox order.
            events.sort { $0.id < $1.id }
            if let preparation { events = try await preparation(events) }
            guard !events.isEmpty else { return RelayedBatch(rows: rows.count, topics: []) }
            // On a cluster, the WAIT goes to every node the XADDs went to (ClusterPlan).
            let wait = RedisReplicaWait(replicas: options.replicaAcknowledgements, timeout: options.replicaWait)
            var replies = try await redis.pipeline(
                events.map { event in
                    [
                        "XADD", RedisArgument(EventStream.key(topic: event.topic)), "*",
                        RedisArgument(EventStream.Field.type), RedisArgument(event.type),
                        RedisArgument(EventStream.Field.payload), RedisArgument(event.payload),
                        RedisArgument(EventStream.Field.outboxID), RedisArgument(event.id),
                        RedisArgument(EventStream.Field.source), RedisArgument(schema),
                    ]
                } + wait.commands)
            if !wait.commands.isEmpty, let shortfall = wait.shortfall(replies.removeLast(), confirming: "the events") {
                throw EventStreamFailure("\(shortfall); sending them again")
            }
            for case .error(let message) in replies {
                throw EventStreamFailure("Redis refused an XADD: \(message)")
            }
            return RelayedBatch(rows: rows.count, topics: Set(events.map(\.topic)))
        }
    }

    /// What one batch moved.
    struct RelayedBatch {
        /// The rows it took (0 when the outbox is empty or another relay holds this outbox), events
        /// the preparation left out included.
        var rows: Int
        /// The topics it sent events to.
        var topics: Set<String>
    }

    /// The SQL of one outbox, and the key of its relays' turn.
    struct Statements: Sendable {
        let lockKey: Int64
        /// Takes the relay's turn (`$1`, the lock key), then takes and deletes the oldest `$2` rows.
        let takeBatch: String
        /// The rows waiting, as the gauge reports them: counted up to `$1`, and beyond it the span
        /// of their ids (an upper bound: ids of rolled-back appends leave gaps), read from the two
        /// ends of the primary key, which costs the same however long the backlog is. A `count(*)`
        /// reads every row each time (a backlog of millions is what Redis down for minutes leaves
        /// behind), and the relay measures inline, once a second (docs/perf.md, "Choices in the code").
        let waitingRows: String

        init(schema: String) {
            lockKey = OutboxRelay.lockKey(schema: schema)
            takeBatch = """
                DELETE FROM \(schema).outbox WHERE id = ANY(ARRAY(
                    SELECT id FROM \(schema).outbox WHERE (SELECT pg_try_advisory_xact_lock($1))
                    ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED))
                RETURNING id, topic, type, payload::text
                """
            waitingRows = """
                SELECT CASE WHEN counted < $1 THEN counted ELSE (SELECT max(id) - min(id) + 1 FROM \(schema).outbox) END
                FROM (SELECT count(*) AS counted FROM (SELECT FROM \(schema).outbox LIMIT $1) AS waiting) AS bounded
                """
        }
    }

    /// The advisory lock that lets one relay at a time work on `schema`'s outbox. Whoever holds it
    /// holds every relay of the outbox back.
    public static func lockKey(schema: String) -> Int64 {
        AdvisoryLockKey.of("aviary.outbox.\(schema)")
    }
}
