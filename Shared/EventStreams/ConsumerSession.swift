import ChannelSupport
import Logging
import Metrics
import RPC
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
    /// When to remove the group's idle consumers next (``removeIdleConsumers()``), along a claim.
    var nextConsumerSweep = ContinuousClock.now
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
                    let held: Bool
                    if let mayHold = options.mayHoldLease, !(await mayHold()) {
                        // Another instance's turn (PartitionMembership).
                        if holdsLease {
                            logger.info("gave the consumer lease up: another instance handles this partition now")
                            await releaseLease()
                        }
                        held = false
                    } else {
                        held = try await renewLease(for: leaseTime)
                    }
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
            if ContinuousClock.now >= nextConsumerSweep {
                nextConsumerSweep = .now + options.idleConsumerRetention
                await removeIdleConsumers()
                await removeIdlePredecessors()
            }
        } else {
            let command =
                readCommand(from: ">", count: options.batchSize, block: Int(options.blockTimeout.milliseconds))
            let entries = try StreamEntry.entries(ofRead: try await redis.send(command))
            guard !entries.isEmpty else { return metrics.recordLag(oldest: nil) }
            try await deliver(entries, redelivered: false)
            // One entry: the topic is quiet, and the next event is handled as soon as it comes.
            if options.gatherDelay > .zero, entries.count > 1, entries.count < options.batchSize {
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
            guard try await handle(EventBatch(topic: topic, events: events)) else { return }
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

    /// Runs the handler; false when it was cancelled because this consumer can no longer vouch for
    /// its lease. With a lease, renews it every fifth of its term while the handler runs, so that a
    /// standby does not claim the events of a handler that is slow but alive (calls waiting out
    /// their timeouts in an outage) and handle them, and the events after them, alongside it. A
    /// handler still running after `maxHandlerTime`, or whose lease was taken or could not be renewed
    /// within four fifths of its term, is cancelled; once it has ended, the consumer gives the lease
    /// up and stands back for a term, so a standby takes over, and its events are read again.
    private mutating func handle(_ batch: EventBatch) async throws -> Bool {
        guard let leaseTime = options.leaseTime else {
            try await handler(batch)
            return true
        }
        enum Ending { case handled, renewalDue, leaseLost, overran }
        let (handler, maxHandlerTime, session) = (handler, options.maxHandlerTime, self)
        let started = ContinuousClock.now
        var lastRenewal = leaseRenewed
        let ending = try await withThrowingTaskGroup(of: Ending.self) { group in
            defer { group.cancelAll() }
            group.addTask {
                try await handler(batch)
                return .handled
            }
            var due = lastRenewal + leaseTime / 5
            while true {
                group.addTask { [due] in
                    try await Task.sleep(until: min(due, started + maxHandlerTime))
                    return .renewalDue
                }
                guard try await group.next() == .renewalDue else { return Ending.handled }
                let now = ContinuousClock.now
                if now - started >= maxHandlerTime { return .overran }
                do {
                    // A renewal still waiting (Redis stalled for this instance alone) when four
                    // fifths of the term are gone vouches for nothing: a standby may take over.
                    let renewal = { @Sendable in try await session.renewLease(for: leaseTime) }
                    guard try await value(of: renewal, before: lastRenewal + leaseTime * 4 / 5) == true else {
                        return .leaseLost
                    }
                    lastRenewal = now
                    due = now + leaseTime / 5
                } catch {
                    // Redis is unreachable: past four fifths of the term, a standby may take over.
                    if ContinuousClock.now - lastRenewal >= leaseTime * 4 / 5 { return .leaseLost }
                    due = ContinuousClock.now + .milliseconds(50)
                }
            }
        }
        leaseRenewed = lastRenewal
        guard ending != .handled else { return true }
        metrics.failures.increment()
        holdsLease = false
        readsOwnPending = true
        logger.warning(
            ending == .overran
                ? "an event handler ran past the longest allowed; it was cancelled, and another instance may take the topic over"
                : "the consumer lease was lost while an event handler ran; it was cancelled, and another instance takes the topic over",
            metadata: [
                "events.count": "\(batch.events.count)", "events.first_id": "\(batch.events[0].streamID)",
                "handler.ran": "\(ContinuousClock.now - started)",
            ])
        // The handler has ended (the group waited for it): the lease can go at once, and a standby,
        // which looks every quarter term at most, takes it before this consumer looks again.
        await releaseLease()
        await pauseUnlessStopping(for: leaseTime)
        return false
    }
}
