import Synchronization

/// The messages of one `RedisSubscriber.subscribe` call, as an `AsyncSequence`.
///
/// Iterate it from one task only. The sequence ends after `unsubscribe()` or `RedisSubscriber.shutdown()`.
/// The subscription ends with `unsubscribe()`, when the iterating task is cancelled, or when the
/// subscription object is released; Redis is told to `UNSUBSCRIBE` once no subscription to the channel
/// is left.
///
/// Buffering: up to `bufferSize` messages wait for the consumer; when one more arrives, the **oldest**
/// waiting message is dropped (a slow consumer sees the latest messages, never blocks the subscriber's
/// other channels), `droppedMessageCount` grows and a warning is logged. After a drop, catch up from the
/// source of truth as after a reconnection.
public final class RedisSubscription: AsyncSequence, Sendable {
    public typealias Element = RedisMessage
    public typealias Failure = Never

    /// The channel.
    public let name: String
    private let stream: AsyncStream<RedisMessage>
    private let sink: MessageSink
    private let registry: SubscriberRegistry
    private let id: Int

    init(channel: String, id: Int, stream: AsyncStream<RedisMessage>, sink: MessageSink, registry: SubscriberRegistry) {
        name = channel
        self.id = id
        self.stream = stream
        self.sink = sink
        self.registry = registry
    }

    deinit {
        registry.remove(name, id: id)
    }

    /// How many messages were dropped because the buffer was full.
    public var droppedMessageCount: Int {
        sink.droppedCount.load(ordering: .relaxed)
    }

    /// Stops delivery to this subscription at once and ends its sequence; Redis unsubscribes when no
    /// other subscription to the same channel remains. Idempotent.
    public func unsubscribe() {
        registry.remove(name, id: id)
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), subscription: self)
    }

    /// Yields the subscription's messages; keeps the subscription alive while iterating.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<RedisMessage>.Iterator
        let subscription: RedisSubscription

        public mutating func next() async -> RedisMessage? {
            await base.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> RedisMessage? {
            await base.next(isolation: actor)
        }
    }
}

/// Where the subscriber thread pushes one subscription's messages.
final class MessageSink: Sendable {
    let continuation: AsyncStream<RedisMessage>.Continuation
    let droppedCount = Atomic<Int>(0)

    init(continuation: AsyncStream<RedisMessage>.Continuation) {
        self.continuation = continuation
    }

    /// Queues `message`; returns the new dropped count when the buffer overflowed.
    func deliver(_ message: RedisMessage) -> Int? {
        if case .dropped = continuation.yield(message) {
            return droppedCount.add(1, ordering: .relaxed).newValue
        }
        return nil
    }
}
