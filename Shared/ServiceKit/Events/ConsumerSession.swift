import Logging
import Metrics
import Redis

/// The loop of one running ``EventStreamConsumer`` and what it must read next.
struct ConsumerSession {
    let topic: String
    let group: String
    let consumer: String
    let options: EventStreamConsumer.Options
    let redis: RedisClient
    let logger: Logger
    let handler: EventStreamConsumer.Handler
    let metrics: ConsumerMetrics
    let key: String

    private var groupExists = false
    /// This consumer may have pending entries (after a failed handler or acknowledgement, or a restart
    /// under the same name): they are read again before anything new, which keeps the order.
    private var readsOwnPending = true
    /// After a handler failure, pending entries are retried one at a time.
    private var retriesSingly = false
    /// When to look for entries other consumers left pending, and where that scan stands.
    var nextClaim = ContinuousClock.now
    var claimCursor = "0-0"
    /// With a lease: whether this consumer holds it, and whether it still has to claim what the
    /// previous holder left pending (before reading anything new, which keeps the order).
    private var holdsLease = false
    /// When the lease was last renewed (the renewal's start), while this consumer holds it.
    private var leaseRenewed = ContinuousClock.now
    private var takesOver = false
    private var handlerFailures: RetryBackoff
    private var redisFailures = RetryBackoff(initial: .milliseconds(100), maximum: .seconds(5))

    init(
        topic: String, group: String, consumer: String, options: EventStreamConsumer.Options, redis: RedisClient,
        logger: Logger, handler: @escaping EventStreamConsumer.Handler, metrics: ConsumerMetrics
    ) {
        self.topic = topic
        self.group = group
        self.consumer = consumer
        self.options = options
        self.redis = redis
        self.logger = logger
        self.handler = handler
        self.metrics = metrics
        self.key = EventStream.key(topic: topic)
        self.handlerFailures = RetryBackoff(initial: options.retryDelay, maximum: options.maxRetryDelay)
    }

    mutating func run() async {
        while !serviceIsStopping {
            do {
                if !groupExists {
                    try await createGroup()
                    groupExists = true
                }
                if let leaseTime = options.leaseTime, !holdsLease || ContinuousClock.now - leaseRenewed >= leaseTime / 5 {
                    let started = ContinuousClock.now
                    let held = try await renewLease(for: leaseTime)
                    if held && !holdsLease {
                        logger.info("took the consumer lease: this instance now handles the topic")
                        takesOver = true
                        claimCursor = "0-0"
                    }
                    holdsLease = held
                    leaseRenewed = started
                    guard held else {
                        // Another instance handles the topic: none of its lag is this one's.
                        metrics.recordLag(oldest: nil)
                        await pauseUnlessStopping(for: min(leaseTime / 4, .milliseconds(500)))
                        continue
                    }
                }
                try await step()
                if redisFailures.failures > 0 {
                    logger.notice("consuming events again", metadata: ["failures": "\(redisFailures.failures)"])
                    redisFailures.reset()
                }
            } catch let error as RedisError where error.serverMessage?.hasPrefix("NOGROUP") == true {
                logger.warning("the consumer group is gone (Redis restarted empty?); creating it again")
                groupExists = false
                readsOwnPending = true
            } catch {
                if serviceIsStopping { break }
                // Whatever was read but not acknowledged is pending on this consumer: read it first.
                readsOwnPending = true
                let delay = redisFailures.next()
                if redisFailures.isWorthLogging {
                    logger.warning(
                        "reading events failed; retrying",
                        metadata: [
                            "error": "\(String(reflecting: error))", "retry_in": "\(delay)",
                            "failures": "\(redisFailures.failures)",
                        ])
                }
                await pauseUnlessStopping(for: delay)
            }
        }
        if holdsLease { await releaseLease() }
    }

    private mutating func step() async throws {
        if takesOver {
            let entries = try await claimIdleEntries(minIdle: .zero)
            if claimCursor == "0-0" { takesOver = false }
            if !entries.isEmpty { try await deliver(entries, redelivered: true) }
        } else if readsOwnPending {
            let entries = try StreamEntry.entries(
                ofRead: try await redis.send(readCommand(from: "0", count: retriesSingly ? 1 : options.batchSize)))
            if entries.isEmpty {
                readsOwnPending = false
                retriesSingly = false
                return
            }
            try await deliver(entries, redelivered: true)
        } else if ContinuousClock.now >= nextClaim {
            let entries = try await claimIdleEntries(minIdle: options.claimMinIdle)
            if !entries.isEmpty { try await deliver(entries, redelivered: true) }
        } else {
            let command =
                readCommand(from: ">", count: options.batchSize, block: Self.milliseconds(options.blockTimeout))
            let entries = try StreamEntry.entries(ofRead: try await redis.send(command))
            guard !entries.isEmpty else { return metrics.recordLag(oldest: nil) }
            try await deliver(entries, redelivered: false)
            if options.gatherDelay > .zero, entries.count < options.batchSize {
                await pauseUnlessStopping(for: options.gatherDelay)
            }
        }
    }

    /// Hands the entries to the handler and acknowledges them, after moving to the dead-letter stream
    /// those delivered too often or unreadable. A handler failure is not thrown: the entries stay
    /// pending and are read again after a back-off.
    private mutating func deliver(_ entries: [StreamEntry], redelivered: Bool) async throws {
        metrics.recordLag(oldest: entries.first)
        let deliveries = redelivered ? try await deliveryCounts(of: entries) : [:]
        var events: [DeliveredEvent] = []
        var rejected: [(entry: StreamEntry, deliveries: Int, reason: String)] = []
        var vanished: [String] = []
        for entry in entries {
            let count = deliveries[entry.id] ?? 1
            if entry.fields == nil {
                vanished.append(entry.id)
            } else if count > options.maxDeliveries {
                rejected.append((entry, count, "delivered \(count) times without being handled"))
            } else if let event = entry.event(topic: topic, deliveries: count) {
                events.append(event)
            } else {
                rejected.append((entry, count, "malformed: missing or invalid type, payload, outbox_id or source"))
            }
        }
        if !vanished.isEmpty {
            logger.error(
                "events were trimmed from the stream before they were handled",
                metadata: ["events.count": "\(vanished.count)", "events.first_id": "\(vanished[0])"])
            _ = try await redis.send(["XACK", RedisArgument(key), RedisArgument(group)] + vanished.map { RedisArgument($0) })
        }
        if !rejected.isEmpty { try await deadLetter(rejected) }
        guard !events.isEmpty, !Task.isCancelled else { return }
        do {
            try await handler(EventBatch(topic: topic, events: events))
        } catch {
            // A consumer stopped mid-batch leaves its entries pending, for another consumer to claim.
            if Task.isCancelled { return }
            metrics.failures.increment()
            readsOwnPending = true
            retriesSingly = true
            let delay = handlerFailures.next()
            logger.warning(
                "an event handler failed; its events will be delivered again",
                metadata: [
                    "error": "\(String(reflecting: error))", "events.count": "\(events.count)",
                    "events.first_id": "\(events[0].streamID)", "events.deliveries": "\(events[0].deliveries)",
                    "retry_in": "\(delay)",
                ])
            await pauseUnlessStopping(for: delay)
            return
        }
        handlerFailures.reset()
        _ = try await redis.send(
            ["XACK", RedisArgument(key), RedisArgument(group)] + events.map { RedisArgument($0.streamID) })
        metrics.consumed.increment(by: events.count)
    }
}
