import Logging
import Metrics
import Redis
import ServiceLifecycle
import Synchronization

/// The tweet bodies this process read from ``TweetCache`` or built lately, so that the tweets many
/// people read cost no Redis `MGET` (a home timeline read asks for twenty).
///
/// A body changes only when a user it shows edits their profile; a deleted tweet's body is never
/// shown, reads rebuild it from its row. ``TweetCache/forget(_:)`` then announces the tweets on the
/// channel `aviary:tweets:forget:<database>` once their tombstones are in, and every process drops
/// what it hears of. A process trusts its copy only while its subscription is up: on a disconnect,
/// or a message dropped, it empties the copy and keeps nothing until the subscription is back. A
/// read keeps what it fetched only if no announcement arrived meanwhile (``Epoch``), so a body read
/// just before its tombstone cannot outlive the announcement. Entries also expire after `lifetime`,
/// which bounds how stale a silently dead subscription could leave them.
///
/// Metrics: `aviary_tweets_local_bodies_total` (counter, `result` `hit` or `miss`: bodies asked for
/// and found here or not) and `aviary_tweets_local_bodies` (gauge: bodies held).
final class LocalBodies: Service, Sendable {
    /// When a read looked; what it fetched is kept only if nothing was forgotten since.
    struct Epoch: Equatable, Sendable {
        fileprivate let value: Int
    }

    static func channel(database: Int) -> String { "aviary:tweets:forget:\(database)" }

    private let redis: RedisClient
    private let capacity: Int
    private let lifetime: Duration
    private let logger: Logger
    private let state = Mutex(State())
    private let hits = Counter(label: "aviary_tweets_local_bodies_total", dimensions: [("result", "hit")])
    private let misses = Counter(label: "aviary_tweets_local_bodies_total", dimensions: [("result", "miss")])
    private let held = Gauge(label: "aviary_tweets_local_bodies")

    private struct State {
        var bodies: [Int64: Entry] = [:]
        var trusted = false
        /// Whether the channel was subscribed to once: the subscriber subscribes again by itself
        /// after a reconnection, before it reports one.
        var subscribed = false
        /// Bumped at every announcement and every loss of trust.
        var epoch = 0
    }

    private struct Entry {
        let body: [UInt8]
        let expires: ContinuousClock.Instant
    }

    init(redis: RedisClient, capacity: Int, lifetime: Duration = .seconds(30), logger: Logger) {
        self.redis = redis
        self.capacity = capacity
        self.lifetime = lifetime
        self.logger = logger
    }

    /// The bodies of `ids` held here, and the epoch to keep what the caller fetches under (nil while
    /// the copy is not trusted: nothing is kept then).
    func bodies(_ ids: [Int64]) -> (found: [Int64: [UInt8]], epoch: Epoch?) {
        let now = ContinuousClock.now
        let result: (found: [Int64: [UInt8]], epoch: Epoch?) = state.withLock { state in
            guard state.trusted else { return ([:], nil) }
            var found: [Int64: [UInt8]] = [:]
            for id in ids {
                guard let entry = state.bodies[id] else { continue }
                if entry.expires > now { found[id] = entry.body } else { state.bodies.removeValue(forKey: id) }
            }
            return (found, Epoch(value: state.epoch))
        }
        if !result.found.isEmpty { hits.increment(by: result.found.count) }
        if result.found.count < ids.count { misses.increment(by: ids.count - result.found.count) }
        return result
    }

    /// Keeps `bodies`, fetched since `epoch`, unless something was forgotten since.
    func keep(_ bodies: some Sequence<(key: Int64, value: [UInt8])>, since epoch: Epoch?) {
        guard let epoch else { return }
        let expires = ContinuousClock.now + lifetime
        state.withLock { state in
            guard state.trusted, state.epoch == epoch.value else { return }
            for (id, body) in bodies {
                if state.bodies.count >= capacity { evict(&state) }
                state.bodies[id] = Entry(body: body, expires: expires)
            }
            held.record(state.bodies.count)
        }
    }

    /// Makes room: drops an eighth of the entries, whichever come first in the dictionary (an order
    /// its per-process hash seed scatters). Expired ones go this way too, or when read.
    private func evict(_ state: inout State) {
        for id in Array(state.bodies.keys.prefix(max(1, capacity / 8))) { state.bodies.removeValue(forKey: id) }
    }

    // MARK: Watching

    /// Listens for announcements until the service group stops.
    func run() async throws {
        await cancelWhenGracefulShutdown { await self.watch() }
    }

    private func watch() async {
        let subscriber = RedisSubscriber(configuration: redis.configuration, logger: logger)
        let channel = Self.channel(database: redis.configuration.database)
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { tasks in
                tasks.addTask {
                    for await event in subscriber.events() {
                        switch event {
                        case .disconnected: self.distrust()
                        case .reconnected: self.trust()
                        }
                    }
                }
                tasks.addTask {
                    guard
                        let subscription = await subscriber.subscribeRetrying(channel, bufferSize: 4096, onRetry: { error in
                            self.logger.warning("cannot hear which tweet bodies change yet; reading them all from Redis", metadata: ["error": "\(error)"])
                        })
                    else { return }
                    self.state.withLock { $0.subscribed = true }
                    self.trust()
                    var dropped = 0
                    for await message in subscription {
                        if subscription.droppedMessageCount != dropped {
                            dropped = subscription.droppedMessageCount
                            self.distrust()
                            self.trust()
                        }
                        self.forget(String(decoding: message.payload, as: UTF8.self).split(separator: " ").compactMap { Int64($0) })
                    }
                }
            }
        } onCancel: {
            Task { await subscriber.shutdown() }
        }
        await subscriber.shutdown()
        distrust()
    }

    private func forget(_ ids: [Int64]) {
        state.withLock { state in
            state.epoch += 1
            for id in ids { state.bodies[id] = nil }
            held.record(state.bodies.count)
        }
    }

    private func trust() {
        state.withLock { $0.trusted = $0.subscribed }
    }

    private func distrust() {
        state.withLock { state in
            state.trusted = false
            state.epoch += 1
            state.bodies = [:]
            held.record(0)
        }
    }
}
