import Foundation
import Logging
import Metrics
import Redis
import ServiceLifecycle

/// Reads one topic's stream (``EventStream``) as a member of a Redis consumer group and hands the
/// events to a handler in batches; each instance of a service is one consumer of the service's group,
/// so the instances share the work.
///
/// - A new group starts at the **beginning** of the stream (`XGROUP CREATE … 0 MKSTREAM`), not at
///   its end: a consumer service deployed or started after its producers still gets every event the
///   stream retains (the newest `streamMaxLength` while no group reads it; see ``OutboxRelay``),
///   where `$` would silently skip them.
/// - Reads are `XREADGROUP … COUNT batchSize BLOCK blockTimeout`, on a connection of the consumer's
///   own (a blocking read must not hold a connection of the shared pool).
/// - Entries are acknowledged (`XACK`) only after the handler returned. Delivery is **at least
///   once**: handlers must be idempotent (``DeliveredEvent/deduplicationKey``).
/// - A handler that throws gets the entries again after a back-off, one entry at a time, so that one
///   bad entry neither holds back nor takes down the others. An entry delivered more than
///   `maxDeliveries` times (counted by Redis, across consumers) is moved to the topic's dead-letter
///   stream and acknowledged, with an error logged.
/// - Every `claimInterval`, entries pending longer than `claimMinIdle` on any consumer (one that
///   crashed or was killed) are claimed with `XAUTOCLAIM` and handled here.
/// - On a graceful shutdown the batch in progress is handled and acknowledged, then `run()` returns
///   (within `blockTimeout` when idle). Cancelled, it stops at once and leaves its batch pending, for
///   another consumer to claim.
///
/// Metrics, with dimensions `topic` and `group`: `aviary_events_consumed_total`,
/// `aviary_events_handler_failures_total`, `aviary_events_dead_lettered_total`, and the gauge
/// `aviary_events_lag_seconds`: how old the oldest event of the batch this consumer took last was
/// (by its stream id, Redis' clock), 0 once a read finds nothing new; it grows while a handler
/// keeps failing, as the batch is taken again.
public struct EventStreamConsumer: Service {
    /// Handles a batch; throwing makes the consumer retry it later.
    public typealias Handler = @Sendable (EventBatch) async throws -> Void

    public let topic: String
    public let group: String
    /// This consumer's name within the group; unique per process (see ``consumerName(service:nodeID:)``).
    public let consumer: String
    private let redisConfiguration: RedisConfiguration
    private let options: Options
    private let logger: Logger
    private let handler: Handler
    private let metrics: ConsumerMetrics

    /// - Parameters:
    ///   - redis: where the streams are; the consumer opens one connection of its own with it.
    ///   - metrics: where its metrics go (tests pass a factory of their own).
    ///   - handler: called with each batch, never concurrently with itself.
    public init(
        topic: String, group: String, consumer: String, redis: RedisConfiguration, options: Options = .init(),
        logger: Logger, metrics: any MetricsFactory = MetricsSystem.factory, handler: @escaping Handler
    ) {
        self.topic = topic
        self.group = group
        self.consumer = consumer
        self.redisConfiguration = redis
        self.options = options
        var logger = logger
        logger[metadataKey: "events.topic"] = "\(topic)"
        logger[metadataKey: "events.group"] = "\(group)"
        logger[metadataKey: "events.consumer"] = "\(consumer)"
        self.logger = logger
        self.handler = handler
        self.metrics = ConsumerMetrics(topic: topic, group: group, factory: metrics)
    }

    /// A consumer name unique to this process: `<service>-<node id>-<pid>`.
    public static func consumerName(service: String, nodeID: Int) -> String {
        "\(service)-\(nodeID)-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// Consumes until the task is cancelled or the service group shuts down gracefully. Never
    /// throws: Redis failures are logged and retried.
    public func run() async throws {
        var configuration = redisConfiguration
        configuration.poolSize = 1
        // A blocking read waits up to `blockTimeout` for its reply: it must not hit the socket timeout.
        configuration.commandTimeout = redisConfiguration.commandTimeout + options.blockTimeout
        let redis = RedisClient(configuration: configuration, logger: logger)
        var session = ConsumerSession(
            topic: topic, group: group, consumer: consumer, options: options, redis: redis, logger: logger,
            handler: handler, metrics: metrics)
        await session.run()
        await redis.shutdown()
    }
}

/// The metrics of one consumer, created once.
struct ConsumerMetrics: Sendable {
    let consumed: Counter
    let failures: Counter
    let deadLettered: Counter
    let lag: Gauge

    init(topic: String, group: String, factory: any MetricsFactory) {
        let dimensions = [("topic", topic), ("group", group)]
        consumed = Counter(label: "aviary_events_consumed_total", dimensions: dimensions, factory: factory)
        failures = Counter(label: "aviary_events_handler_failures_total", dimensions: dimensions, factory: factory)
        deadLettered = Counter(label: "aviary_events_dead_lettered_total", dimensions: dimensions, factory: factory)
        lag = Gauge(label: "aviary_events_lag_seconds", dimensions: dimensions, factory: factory)
    }

    /// Records the lag of a batch whose oldest entry is `oldest`; nil: caught up.
    func recordLag(oldest: StreamEntry?) {
        guard let oldest, let milliseconds = oldest.milliseconds else { return lag.record(0) }
        let now = Date().timeIntervalSince1970
        lag.record(max(0, now - Double(milliseconds) / 1000))
    }
}
