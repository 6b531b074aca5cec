import ChannelSupport
import Locking
import Logging

/// The state the subscriber thread shares with callers: live subscriptions per channel, `subscribe`
/// calls waiting for Redis to confirm, the channels changed since the thread last looked, event
/// streams, and the wake-up pipe that tells the thread something changed.
final class SubscriberRegistry: Sendable {
    private struct Waiter {
        var continuation: CheckedContinuation<Void, any Error>
        var deadline: ContinuousClock.Instant
    }

    private struct Entry {
        var sinks: [Int: MessageSink] = [:]
        /// `subscribe` calls (by subscription id) waiting for the confirmation.
        var waiters: [Int: Waiter] = [:]
        /// Whether Redis has confirmed the subscription on the current connection.
        var isConfirmed = false
    }

    private struct State {
        var topics: [String: Entry] = [:]
        /// Channels wanted or dropped since the thread took the changes: the thread's work is
        /// proportional to these, not to every channel (a hub may hold one per connected user).
        var changed: Set<String> = []
        var nextID = 0
        var isShuttingDown = false
    }

    let configuration: RedisConfiguration
    let logger: Logger
    private let state = Locked(State())
    /// The streams of ``events()``.
    private let connectionEvents = Broadcast<RedisSubscriber.Event>(bufferingPolicy: .bufferingNewest(16))
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        (wakeRead, wakeWrite) = Posix.makePipe()
    }

    deinit {
        Posix.close(wakeRead)
        Posix.close(wakeWrite)
    }

    // MARK: Called by users of RedisSubscriber

    /// Registers a subscription and returns once Redis has confirmed it, so every message published
    /// after the return is delivered.
    func subscribe(_ topic: String, bufferSize: Int) async throws -> RedisSubscription {
        precondition(bufferSize > 0, "bufferSize must be at least 1")
        let (stream, continuation) = AsyncStream.makeStream(
            of: RedisMessage.self, bufferingPolicy: .bufferingNewest(bufferSize))
        let sink = MessageSink(continuation: continuation)
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        // Cancelling the iterating task ends the subscription.
        continuation.onTermination = { [weak self] _ in
            self?.remove(topic, id: id)
        }
        let deadline = ContinuousClock.now + configuration.commandTimeout
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, any Error>? = state.withLock { state in
                    if state.isShuttingDown { return .failure(RedisError(.closed)) }
                    // Checked under the lock so a cancellation racing with registration is not lost.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.topics[topic, default: Entry()].sinks[id] = sink
                    if state.topics[topic]!.isConfirmed { return .success(()) }
                    state.changed.insert(topic)
                    state.topics[topic]!.waiters[id] = Waiter(continuation: waiter, deadline: deadline)
                    return nil
                }
                if let immediate {
                    waiter.resume(with: immediate)
                } else {
                    wake()
                }
            }
        } onCancel: {
            fail(topic, id: id, with: CancellationError())
        }
        return RedisSubscription(channel: topic, id: id, stream: stream, sink: sink, registry: self)
    }

    /// Removes one subscription and ends its sequence; idempotent.
    func remove(_ topic: String, id: Int) {
        let sink: MessageSink? = state.withLock { state in
            guard let sink = state.topics[topic]?.sinks.removeValue(forKey: id) else { return nil }
            if state.topics[topic]!.sinks.isEmpty {
                state.topics[topic] = nil
                state.changed.insert(topic)
            }
            return sink
        }
        guard let sink else { return }
        sink.continuation.finish()
        wake()
    }

    func events() -> AsyncStream<RedisSubscriber.Event> {
        connectionEvents.stream()
    }

    /// Asks the thread to stop; returns `false` if that was already asked.
    func requestShutdown() -> Bool {
        let first = state.withLock { state in
            defer { state.isShuttingDown = true }
            return !state.isShuttingDown
        }
        wake()
        return first
    }

    // MARK: Called by the subscriber thread

    var isShuttingDown: Bool {
        state.withLock { $0.isShuttingDown }
    }

    var wakeUpDescriptor: Int32 {
        wakeRead
    }

    func drainWakeUps() {
        Posix.drain(wakeRead)
    }

    /// The channels wanted or dropped since the last call, each with whether it is wanted now and,
    /// if so, whether Redis has confirmed it.
    func takeChanges() -> [(channel: String, wanted: Bool, confirmed: Bool)] {
        state.withLock { state in
            defer { state.changed = [] }
            return state.changed.map { channel in
                let entry = state.topics[channel]
                return (channel, entry != nil, entry?.isConfirmed ?? false)
            }
        }
    }

    /// Whether Redis has confirmed every wanted channel.
    var isEverythingConfirmed: Bool {
        state.withLock { $0.topics.values.allSatisfy(\.isConfirmed) }
    }

    /// Redis confirmed `topic`: its waiting `subscribe` calls return.
    func confirm(_ topic: String) {
        let waiters: [Waiter] = state.withLock { state in
            guard state.topics[topic] != nil else { return [] }
            state.topics[topic]!.isConfirmed = true
            defer { state.topics[topic]!.waiters = [:] }
            return Array(state.topics[topic]!.waiters.values)
        }
        for waiter in waiters {
            waiter.continuation.resume()
        }
    }

    /// The subscriptions of `channels` were lost (their connection dropped, or their slot moved):
    /// they are not confirmed any more, and are changes for the thread to take again.
    func subscriptionsLost(_ channels: some Sequence<String>) {
        state.withLock { state in
            for channel in channels where state.topics[channel] != nil {
                state.topics[channel]!.isConfirmed = false
                state.changed.insert(channel)
            }
        }
    }

    func deliver(_ message: RedisMessage, to topic: String) {
        let sinks = state.withLock { state in state.topics[topic].map { Array($0.sinks.values) } ?? [] }
        for sink in sinks {
            // Log the first drop and then every 1,000th, so a stuck consumer cannot flood the log.
            if let dropped = sink.deliver(message), dropped % 1000 == 1 {
                logger.warning(
                    "A Redis subscription's buffer is full; dropping its oldest messages",
                    metadata: [
                        "redis.channel": "\(message.channel)", "redis.dropped": "\(dropped)",
                    ])
            }
        }
    }

    func emit(_ event: RedisSubscriber.Event) {
        connectionEvents.yield(event)
    }

    /// Fails the `subscribe` calls whose confirmation is overdue; returns the next deadline, if any.
    func expireWaiters(now: ContinuousClock.Instant, error: RedisError) -> ContinuousClock.Instant? {
        var expired: [(String, Int)] = []
        let next: ContinuousClock.Instant? = state.withLock { state in
            var next: ContinuousClock.Instant?
            for (topic, entry) in state.topics {
                for (id, waiter) in entry.waiters {
                    if waiter.deadline <= now {
                        expired.append((topic, id))
                    } else {
                        next = min(next ?? waiter.deadline, waiter.deadline)
                    }
                }
            }
            return next
        }
        for (topic, id) in expired {
            fail(topic, id: id, with: error)
        }
        return next
    }

    /// After the thread stopped: ends every sequence and fails every waiting call with `.closed`.
    func finishAll() {
        let topics = state.withLock { state in
            defer { state.topics = [:] }
            return state.topics
        }
        for entry in topics.values {
            for waiter in entry.waiters.values {
                waiter.continuation.resume(throwing: RedisError(.closed))
            }
            for sink in entry.sinks.values {
                sink.continuation.finish()
            }
        }
        connectionEvents.finish()
    }

    // MARK: Private

    /// Fails a waiting `subscribe` call and drops the subscription it registered.
    private func fail(_ topic: String, id: Int, with error: any Error) {
        let failed: (Waiter, MessageSink?)? = state.withLock { state in
            guard let waiter = state.topics[topic]?.waiters.removeValue(forKey: id) else { return nil }
            let sink = state.topics[topic]!.sinks.removeValue(forKey: id)
            if state.topics[topic]!.sinks.isEmpty {
                state.topics[topic] = nil
            }
            return (waiter, sink)
        }
        guard let (waiter, sink) = failed else { return }
        sink?.continuation.finish()
        waiter.continuation.resume(throwing: error)
        wake()
    }

    private func wake() {
        Posix.writeByte(wakeWrite)
    }
}
