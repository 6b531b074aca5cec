import Postgres
import Redis

extension OutboxRelay {
    /// Moves one batch in one transaction; returns how many rows it moved (0 when the outbox is
    /// empty or another relay holds this outbox).
    func relayBatch() async throws -> Int {
        let schema = schema
        let redis = redis
        let batchSize = options.batchSize
        let maxLength = RedisArgument(options.streamMaxLength)
        let lockKey = Self.lockKey(schema: schema)
        return try await postgres.transaction { connection in
            let locked = try await connection.query("SELECT pg_try_advisory_xact_lock($1)", [lockKey])
            guard try locked[0].decode(Bool.self, at: 0) else { return 0 }
            let rows = try await connection.query(
                "SELECT id, topic, type, payload::text FROM \(schema).outbox ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
                [batchSize])
            guard !rows.isEmpty else { return 0 }
            var ids: [Int64] = []
            var commands: [[RedisArgument]] = []
            ids.reserveCapacity(rows.count)
            commands.reserveCapacity(rows.count)
            for row in rows {
                let id = try row.decode(Int64.self, at: 0)
                ids.append(id)
                commands.append([
                    "XADD", RedisArgument(EventStream.key(topic: try row.decode(String.self, at: 1))),
                    "MAXLEN", "~", maxLength, "*",
                    RedisArgument(EventStream.Field.type), RedisArgument(try row.decode(String.self, at: 2)),
                    RedisArgument(EventStream.Field.payload), RedisArgument(try row.decode(String.self, at: 3)),
                    RedisArgument(EventStream.Field.outboxID), RedisArgument(id),
                    RedisArgument(EventStream.Field.source), RedisArgument(schema),
                ])
            }
            // The rows stay locked until the events are in their streams, so they leave the outbox
            // only once they are sent.
            let replies = try await redis.pipeline(commands)
            for case .error(let message) in replies {
                throw EventStreamFailure("Redis refused an XADD: \(message)")
            }
            try await connection.execute("DELETE FROM \(schema).outbox WHERE id = ANY($1)", [ids])
            return ids.count
        }
    }

    /// The advisory lock that lets one relay at a time work on `schema`'s outbox: a stable 64-bit
    /// FNV-1a hash, like the migrator's lock (whose text differs).
    static func lockKey(schema: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "aviary.outbox.\(schema)".utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }
}
