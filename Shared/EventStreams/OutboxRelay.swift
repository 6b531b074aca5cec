import Logging
import Metrics
import Postgres
import Redis
import ServiceLifecycle

/// Moves a service's outbox rows (`<schema>.outbox`, see ``Outbox``) to the Redis streams of their
/// topics (``EventStream``), oldest first, and deletes them once Redis has them.
///
/// Each batch is one transaction: delete up to `batchSize` rows (`FOR UPDATE SKIP LOCKED`), `XADD`
/// them all in one pipeline, commit. Nothing is lost: while Redis is down the rows stay
/// in Postgres and the relay backs off and retries. Delivery is **at least once**: a crash between the
/// `XADD`s and the commit sends the batch again, so consumers deduplicate (``DeliveredEvent/deduplicationKey``).
///
/// Order: per topic, events reach the stream in outbox order, so an event appended after another
/// committed is delivered after it. That needs one relay at a time per outbox: every instance of the
/// service runs a relay, but they take turns through a transaction-scoped advisory lock, and those
/// without it stand by (taking over within one poll when the holder dies). Sharing one outbox between
/// relays row by row would let a later batch overtake an earlier one.
///
/// Retention: every `retentionInterval` the relay trims the streams it sends to of the entries
/// every consumer group has acknowledged. A stream whose unacknowledged entries reach
/// `streamMaxLength` (a consumer service down for long) holds the relay back: rows stay in the
/// outbox until the group catches up, so a long outage costs disk in Postgres, never events.
///
/// Latency: the relay polls, every `busyDelay` while there is work, backing off to `idleDelay`
/// when the outbox is empty. A handler that appended events may call ``nudge()`` after its
/// transaction committed to have them relayed at once, or, within `gatherDelay` of the last batch
/// of several events, as soon as that delay is over.
///
/// Metrics: `aviary_outbox_backlog` (gauge, rows waiting: exact up to 10,000, then the span of
/// their ids) and `aviary_outbox_relayed_total` (counter), both with the dimension `schema`, and
/// `aviary_event_stream_length` (gauge, entries left after trimming) with the dimension `topic`.
public struct OutboxRelay: Service {
    /// The schema whose `outbox` table this relay empties.
    public let schema: String
    let postgres: PostgresClient
    let redis: RedisClient
    let options: Options
    let preparation: Preparation?
    let logger: Logger
    let metrics: any MetricsFactory
    private let relayed: Counter
    private let backlog: Gauge
    /// The statements of this outbox and the key of its relays' turn, made once for its schema.
    let statements: Statements

    /// An event on its way from the outbox to its topic's stream.
    public struct Event: Sendable {
        /// Its outbox row.
        public let id: Int64
        public let topic: String
        public let type: String
        /// The payload as JSON text.
        public var payload: String
    }

    /// Completes a batch's events before they are sent on, from what only the producer knows at
    /// sending time: it may change payloads, and leave out events that no consumer needs any more
    /// (their rows are deleted all the same), but not reorder them. Throwing fails the batch, which
    /// stays in the outbox and is retried.
    public typealias Preparation = @Sendable ([Event]) async throws -> [Event]

    /// - Parameters:
    ///   - schema: the producer's schema (a plain SQL identifier), whose `outbox` table exists.
    ///   - postgres, redis: the service's clients; a batch holds one connection of each briefly.
    ///   - preparation: run on each batch before its `XADD`s.
    ///   - metrics: where its metrics go (tests pass a factory of their own).
    public init(
        schema: String, postgres: PostgresClient, redis: RedisClient, options: Options = .init(),
        preparation: Preparation? = nil, logger: Logger, metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        precondition(Self.isPlainIdentifier(schema), "OutboxRelay: '\(schema)' is not a plain SQL identifier")
        self.schema = schema
        self.postgres = postgres
        self.redis = redis
        self.options = options
        self.preparation = preparation
        var logger = logger
        logger[metadataKey: "outbox.schema"] = "\(schema)"
        self.logger = logger
        self.metrics = metrics
        self.relayed = Counter(label: "aviary_outbox_relayed_total", dimensions: [("schema", schema)], factory: metrics)
        self.backlog = Gauge(label: "aviary_outbox_backlog", dimensions: [("schema", schema)], factory: metrics)
        self.statements = Statements(schema: schema)
    }

    /// Wakes every relay of this process now, instead of at its next poll. Call it after committing a
    /// transaction that appended events, when their latency matters; it costs nothing otherwise.
    public static func nudge() {
        RelayWakeups.shared.signalAll()
    }

    /// Relays until the task is cancelled or the service group shuts down gracefully (the batch in
    /// progress completes first). Never throws: failures are logged and retried.
    public func run() async throws {
        let wakeup = RelayWakeup()
        RelayWakeups.shared.register(wakeup)
        defer { RelayWakeups.shared.unregister(wakeup) }
        await warnIfRedisLosesEventsOnRestart()

        var failures = RetryBackoff(initial: options.retryDelay, maximum: options.maxRetryDelay)
        var idleDelay = options.busyDelay
        var redisSuspect = false
        var backlogDue = ContinuousClock.now
        // The topics sent to since the relay started, with their streams' length gauges, and the
        // topics whose streams are full.
        var streams: [String: Gauge] = [:]
        var heldBack: [String: String] = [:]
        var retentionDue = ContinuousClock.now + options.retentionInterval
        while !serviceIsStopping {
            if ContinuousClock.now >= backlogDue {
                await measureBacklog()
                backlogDue = .now + options.backlogInterval
            }
            if ContinuousClock.now >= retentionDue {
                await applyRetention(streams: streams, heldBack: &heldBack)
                retentionDue = .now + options.retentionInterval
            }
            // A batch holds events of any topic: one full stream holds every topic back, in order.
            if !heldBack.isEmpty {
                await pauseUnlessStopping(for: options.retentionInterval)
                continue
            }
            let moved: Int
            do {
                // After a Redis failure, wait until it answers before holding outbox rows locked again.
                if redisSuspect { _ = try await redis.send(["PING"]) }
                let batch = try await relayBatch()
                moved = batch.rows
                for topic in batch.topics where streams[topic] == nil {
                    streams[topic] = Gauge(label: "aviary_event_stream_length", dimensions: [("topic", topic)], factory: metrics)
                }
            } catch {
                if serviceIsStopping { break }
                redisSuspect = error is RedisError || error is EventStreamFailure
                let delay = failures.next()
                if failures.isWorthLogging {
                    logger.warning(
                        "relaying outbox events failed; the rows stay in the outbox and will be retried",
                        metadata: [
                            "error": "\(String(reflecting: error))", "retry_in": "\(delay)",
                            "failures": "\(failures.failures)",
                        ])
                }
                await pauseUnlessStopping(for: delay)
                continue
            }
            if failures.failures > 0 {
                logger.notice("relaying outbox events again", metadata: ["failures": "\(failures.failures)"])
                failures.reset()
                redisSuspect = false
            }
            if moved > 0 {
                relayed.increment(by: moved)
                logger.trace("relayed outbox events", metadata: ["outbox.relayed": "\(moved)"])
            }
            // A full batch means more rows are probably waiting: go on at once.
            if moved == options.batchSize { continue }
            idleDelay = moved > 0 ? options.busyDelay : min(idleDelay * 2, options.idleDelay)
            // Under a steady stream of nudges, let the next batch gather for a moment instead of
            // running one small batch after another. A batch of one says the outbox is quiet: the
            // next event goes at once.
            if moved > 1 { await pauseUnlessStopping(for: options.gatherDelay) }
            await withGracefulShutdownHandler {
                await wakeup.wait(upTo: idleDelay)
            } onGracefulShutdown: {
                wakeup.signal()
            }
        }
        await measureBacklog()
    }

    /// Warns when Redis keeps no append-only file. Rows leave the outbox once Redis has their
    /// events, so from then on its streams hold the only copy: a Redis that restarts without one
    /// loses every event no consumer has taken yet (a notification, a fan-out). Asked once, when
    /// the relay starts; when Redis does not answer (it may be down, and the relay will wait for
    /// it), nothing is said.
    private func warnIfRedisLosesEventsOnRestart() async {
        guard let info = try? await redis.send(["INFO", "persistence"]).string,
            info.split(whereSeparator: \.isNewline).contains("aof_enabled:0")
        else { return }
        logger.warning(
            "Redis keeps no append-only file: events relayed to its streams and not yet consumed would be lost if it restarted; run it with 'appendonly yes'"
        )
    }

    /// Up to this many waiting rows are counted; the gauge is exact below it.
    static let countedBacklog = 10_000

    private func measureBacklog() async {
        do {
            let rows = try await postgres.query(statements.waitingRows, [Int64(Self.countedBacklog)])
            backlog.record(try rows[0].decode(Int64.self, at: 0))
        } catch {
            logger.debug("counting the outbox backlog failed", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    private static func isPlainIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || ("a"..."z").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ("a"..."z").contains($0) || ("0"..."9").contains($0) }
    }
}

/// Something in the event machinery that is not a storage client's own error: a Redis reply of the
/// wrong shape, a refused command inside a pipeline.
struct EventStreamFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
