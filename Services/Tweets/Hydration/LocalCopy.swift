import Logging
import Metrics
import Redis
import ServiceLifecycle
import Synchronization

/// Values this process read lately, by id, kept in memory in front of Redis, Postgres or another
/// service, and dropped when some process announces that they changed. Four kinds are kept
/// (``Kind``): tweet bodies, so that the tweets many people read cost no Redis `MGET` (a home
/// timeline read asks for twenty); tweet states, so that they cost no Postgres query either; the
/// summaries of users who post, so that a new tweet costs no `auth.getUsers` call; and authors'
/// tweet counts, so that a profile view costs no Postgres query here.
///
/// Whoever changes what a value depends on announces the ids on the kind's channel
/// (``Kind/announcement(of:database:)``), and every process drops what it hears of. A process
/// trusts its copy only while its subscription is up: on a disconnect, or a message dropped, it
/// empties the copy and keeps nothing until the subscription is back. A read keeps what it fetched
/// only if no announcement arrived meanwhile (``Epoch``), so a value read just before a change
/// cannot outlive its announcement. Entries also expire after `lifetime`, which bounds how stale a
/// silently dead subscription could leave them.
///
/// Metrics: `aviary_tweets_local_<kind>_total` (counter, `result` `hit` or `miss`: values asked for
/// and found here or not) and `aviary_tweets_local_<kind>` (gauge: values held).
final class LocalCopy<Value: Sendable>: Sendable {
    /// When a read looked; what it fetched is kept only if nothing was forgotten since.
    struct Epoch: Equatable, Sendable {
        fileprivate let value: Int
    }

    /// What a copy holds, which names its channel and metrics.
    enum Kind: String, Sendable {
        /// Tweet bodies (``TweetCache``): ``TweetCache/forget(_:)`` announces tweets after their
        /// tombstones are in.
        case bodies
        /// User summaries (``Accounts/author(_:context:)``): the profile consumer announces users
        /// before it looks up the tweets that show them.
        case users
        /// Tweet counts and flags (``TweetStates``): every write that changes them announces its
        /// tweets once it has committed.
        case states
        /// How many live tweets authors have (``AuthorTweetCounts``): a create and a delete announce
        /// their author once they have committed.
        case counts

        func channel(database: Int) -> String {
            switch self {
            case .bodies: "aviary:tweets:forget:\(database)"
            case .users: "aviary:tweets:forget-users:\(database)"
            case .states: "aviary:tweets:forget-states:\(database)"
            case .counts: "aviary:tweets:forget-counts:\(database)"
            }
        }

        /// The `PUBLISH` that tells every process's copy that `ids` changed.
        func announcement(of ids: some Sequence<Int64>, database: Int) -> [RedisArgument] {
            ["PUBLISH", RedisArgument(channel(database: database)), RedisArgument(ids.map { String($0) }.joined(separator: " "))]
        }

        /// Tells every process that `ids` changed, `local` (this process's copy, if it keeps one) at
        /// once. Redis failing to carry the announcement leaves other processes' copies stale for at
        /// most their lifetime; it is logged, and does not fail the write that changed them.
        func announce(_ ids: [Int64], local: LocalCopy?, redis: RedisClient, logger: Logger) async {
            local?.forget(ids)
            do {
                _ = try await redis.send(announcement(of: ids, database: redis.configuration.database))
            } catch {
                logger.warning(
                    "announcing changed values failed",
                    metadata: ["local.kind": "\(rawValue)", "error": "\(error)", "ids": "\(ids)"])
            }
        }
    }

    private let kind: Kind
    private let redis: RedisClient
    private let capacity: Int
    private let lifetime: Duration
    private let logger: Logger
    private let state = Mutex(State())
    private let hits: Counter
    private let misses: Counter
    private let held: Gauge

    private struct State {
        var values: [Int64: Entry] = [:]
        var trusted = false
        /// Whether the channel was subscribed to once: the subscriber subscribes again by itself
        /// after a reconnection, before it reports one.
        var subscribed = false
        /// Bumped at every announcement and every loss of trust.
        var epoch = 0
    }

    private struct Entry {
        let value: Value
        let expires: ContinuousClock.Instant
    }

    init(_ kind: Kind, redis: RedisClient, capacity: Int, lifetime: Duration, logger: Logger) {
        self.kind = kind
        self.redis = redis
        hits = Counter(label: "aviary_tweets_local_\(kind.rawValue)_total", dimensions: [("result", "hit")])
        misses = Counter(label: "aviary_tweets_local_\(kind.rawValue)_total", dimensions: [("result", "miss")])
        held = Gauge(label: "aviary_tweets_local_\(kind.rawValue)")
        self.capacity = capacity
        self.lifetime = lifetime
        self.logger = logger
    }

    /// The values of `ids` held here, and the epoch to keep what the caller fetches under (nil while
    /// the copy is not trusted: nothing is kept then).
    func values(_ ids: [Int64]) -> (found: [Int64: Value], epoch: Epoch?) {
        let now = ContinuousClock.now
        let result: (found: [Int64: Value], epoch: Epoch?) = state.withLock { state in
            guard state.trusted else { return ([:], nil) }
            var found: [Int64: Value] = [:]
            for id in ids {
                guard let entry = state.values[id] else { continue }
                if entry.expires > now { found[id] = entry.value } else { state.values.removeValue(forKey: id) }
            }
            return (found, Epoch(value: state.epoch))
        }
        if !result.found.isEmpty { hits.increment(by: result.found.count) }
        if result.found.count < ids.count { misses.increment(by: ids.count - result.found.count) }
        return result
    }

    /// Keeps `values`, fetched since `epoch`, unless something was forgotten since.
    func keep(_ values: some Sequence<(key: Int64, value: Value)>, since epoch: Epoch?) {
        guard let epoch else { return }
        let expires = ContinuousClock.now + lifetime
        state.withLock { state in
            guard state.trusted, state.epoch == epoch.value else { return }
            for (id, value) in values {
                if state.values.count >= capacity { evict(&state) }
                state.values[id] = Entry(value: value, expires: expires)
            }
            held.record(state.values.count)
        }
    }

    /// Whether nothing was forgotten since `epoch`, while the copy stayed trusted.
    func isCurrent(_ epoch: Epoch) -> Bool {
        state.withLock { $0.trusted && $0.epoch == epoch.value }
    }

    /// Makes room: drops an eighth of the entries, whichever come first in the dictionary (an order
    /// its per-process hash seed scatters). Expired ones go this way too, or when read.
    private func evict(_ state: inout State) {
        for id in Array(state.values.keys.prefix(max(1, capacity / 8))) { state.values.removeValue(forKey: id) }
    }

    // MARK: Watching

    /// Listens for announcements on `subscriber` until it shuts down; the copy is distrusted then.
    func watch(on subscriber: RedisSubscriber) async {
        let channel = kind.channel(database: redis.configuration.database)
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
                        self.logger.warning(
                            "cannot hear which cached values change yet; reading them all afresh",
                            metadata: ["local.kind": "\(self.kind.rawValue)", "error": "\(error)"])
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
        distrust()
    }

    /// Drops `ids` at once: a writer does so for its own process rather than wait for its announcement.
    func forget(_ ids: [Int64]) {
        state.withLock { state in
            state.epoch += 1
            for id in ids { state.values[id] = nil }
            held.record(state.values.count)
        }
    }

    private func trust() {
        state.withLock { $0.trusted = $0.subscribed }
    }

    private func distrust() {
        state.withLock { state in
            state.trusted = false
            state.epoch += 1
            state.values = [:]
            held.record(0)
        }
    }
}

/// Runs the watches of a process's copies (``LocalCopy/watch(on:)``) on one Redis subscriber, one
/// connection and one thread for them all, until the service group stops.
struct LocalCopyWatch: Service {
    let redis: RedisClient
    let watches: [@Sendable (RedisSubscriber) async -> Void]
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            let subscriber = RedisSubscriber(configuration: redis.configuration, logger: logger)
            await withTaskCancellationHandler {
                await withDiscardingTaskGroup { tasks in
                    for watch in watches { tasks.addTask { await watch(subscriber) } }
                }
            } onCancel: {
                Task { await subscriber.shutdown() }
            }
            await subscriber.shutdown()
        }
    }
}
