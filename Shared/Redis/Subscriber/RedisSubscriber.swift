import Logging
import NIOPosix

/// Redis pub/sub for many channels, served by a dedicated thread: over ONE connection to a server
/// (`SUBSCRIBE`), or on a cluster over one connection to each master whose slots hold a subscribed
/// channel (sharded pub/sub: `SSUBSCRIBE` where the channel's slot lives, so that what is published
/// with `SPUBLISH`, ``RedisConfiguration/publish(_:to:)``, goes to that shard only).
///
/// Several subscriptions to the same channel share one Redis subscription (reference-counted; the last
/// one to end sends `UNSUBSCRIBE`). When a connection drops, or a cluster moves a channel's slot to
/// another shard, the subscriber reconnects with backoff (100 ms, doubling up to 5 s), reads the
/// cluster's slot map again, subscribes again to every live channel, then emits `.reconnected` on
/// `events()`: messages published meanwhile are lost, so callers should catch up from the source of
/// truth then.
///
/// Call `shutdown()` when done: it stops the thread and closes the connections.
public final class RedisSubscriber: Sendable {
    /// A change in the subscriber's connection.
    public enum Event: Sendable, Equatable {
        /// A connection dropped (or a channel's slot moved); messages published from now on may be
        /// missed until `.reconnected`.
        case disconnected
        /// The connections are up again and every live channel is subscribed again.
        case reconnected
    }

    private let registry: SubscriberRegistry
    /// A one-thread pool used as the dedicated thread: it names the thread and lets `shutdown` join it.
    private let thread: NIOThreadPool

    /// Starts the subscriber's thread, which connects at once (and keeps retrying with backoff).
    ///
    /// - Parameter logger: used for connection changes (warning/info) and overflowing buffers (warning).
    public init(configuration: RedisConfiguration, logger: Logger) {
        var logger = logger
        logger[metadataKey: "redis.server"] = "\(configuration.server)"
        let registry = SubscriberRegistry(configuration: configuration, logger: logger)
        self.registry = registry
        self.thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        thread.submit { state in
            guard case .active = state else { return }
            var loop = SubscriberLoop(registry: registry)
            loop.run()
        }
    }

    deinit {
        // Without `shutdown()`, still let the thread end (it would otherwise run forever).
        if registry.requestShutdown() {
            thread.shutdownGracefully { _ in }
        }
    }

    /// Subscribes to `channel`; returns once Redis has confirmed the subscription, so every message
    /// published after this returns is delivered (unless the connection drops: see `events()`).
    ///
    /// - Parameter bufferSize: messages kept for a slow consumer before the oldest are dropped.
    /// - Throws: `RedisError` — `.timeout` or `.connectionFailed` when Redis does not confirm within the
    ///   command timeout, `.closed` after `shutdown()`; or `CancellationError`.
    public func subscribe(_ channel: String, bufferSize: Int = 1024) async throws -> RedisSubscription {
        try await registry.subscribe(channel, bufferSize: bufferSize)
    }

    /// Subscribes to `channel`, retrying with backoff (100 ms, doubling up to 5 s) while Redis cannot
    /// confirm; `onRetry` hears each failure. Nil once the subscriber is shut down or the task is
    /// cancelled.
    public func subscribeRetrying(_ channel: String, bufferSize: Int, onRetry: (RedisError) -> Void) async -> RedisSubscription? {
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled {
            do {
                return try await subscribe(channel, bufferSize: bufferSize)
            } catch let error as RedisError where error.code != .closed {
                onRetry(error)
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            } catch {
                return nil
            }
        }
        return nil
    }

    /// A new stream of connection events (each call returns its own stream; it keeps the 16 latest
    /// events when not consumed). It finishes on `shutdown()`.
    public func events() -> AsyncStream<Event> {
        registry.events()
    }

    /// Stops the thread, closes the connection, ends every subscription's sequence and fails pending
    /// `subscribe` calls with `.closed`. Safe to call more than once.
    public func shutdown() async {
        _ = registry.requestShutdown()
        try? await thread.shutdownGracefully()
    }
}
