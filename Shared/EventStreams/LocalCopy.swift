import AviaryJSON
import Locking
import Logging
import Metrics
import NIOCore
import RPC
import Redis
import ServiceLifecycle

/// Values this process read lately, by id, kept in memory in front of Redis, Postgres or another
/// service, and dropped when some process announces that they changed. A service names each kind
/// it keeps (``LocalCopyKind``): tweets keeps tweet bodies, tweet states, the summaries of users who
/// post and authors' tweet counts; social-graph keeps users' follow counts and whom they follow.
///
/// Whoever changes what a value depends on announces the ids on the kind's channel
/// (``LocalCopyKind/announcement(of:on:)``, or from the outbox relay
/// ``LocalCopyKind/announcer(_:redis:)``), and every process drops what it hears of. A
/// process trusts its copy only while its subscription is up: on a disconnect, or a message dropped,
/// it empties the copy and keeps nothing until the subscription is back. A read keeps what it
/// fetched only if no announcement arrived meanwhile (``Epoch``), so a value read just before a
/// change cannot outlive its announcement. Entries also expire after `lifetime`, which bounds how
/// stale a silently dead subscription, or a writer that died between its commit and its
/// announcement, could leave them.
///
/// Another process hears of a change a moment after the writer answered. So that a user reads
/// their own write whichever process answers, a copy of values a viewer sees as their own (their
/// likes, whom they follow) marks its writers (``changed(_:by:)``, ``WriteMarks``) for `lifetime`,
/// and a marked viewer's reads skip every process's copy (``values(_:viewer:)``).
///
/// Metrics: `aviary_<service>_local_<kind>_total` (counter, `result` `hit` or `miss`: values asked
/// for and found here or not) and `aviary_<service>_local_<kind>` (gauge: values held).
public final class LocalCopy<Value: Sendable>: Sendable {
    /// When a read looked; what it fetched is kept only if nothing was forgotten since.
    public struct Epoch: Equatable, Sendable {
        fileprivate let value: Int
    }

    private let kind: LocalCopyKind
    private let redis: RedisClient
    private let capacity: Int
    private let lifetime: Duration
    private let logger: Logger
    private let state = Locked(State())
    /// The users whose writes changed values lately, when the copy marks them.
    private let writers: WriteMarks?
    private let hits: Counter
    private let misses: Counter
    private let held: Gauge

    private struct State {
        var values: [Int64: Entry] = [:]
        /// The ids in the order they were kept, each with the number it was kept under: an id kept
        /// again, or forgotten, leaves a stale place behind (its number no longer matches).
        var order = CircularBuffer<(id: Int64, kept: Int)>()
        var lastKept = 0
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
        /// Its place in `State.order`.
        let kept: Int
    }

    /// - Parameter markingWriters: whether writers are marked (``changed(_:by:)``), for copies of
    ///   what a viewer sees as their own.
    public init(
        _ kind: LocalCopyKind, redis: RedisClient, capacity: Int, lifetime: Duration, markingWriters: Bool = false, logger: Logger
    ) {
        self.kind = kind
        self.redis = redis
        writers = markingWriters ? WriteMarks(redis: redis, prefix: kind.writerMarkPrefix, window: lifetime, logger: logger) : nil
        hits = Counter(label: "\(kind.metric)_total", dimensions: [("result", "hit")])
        misses = Counter(label: "\(kind.metric)_total", dimensions: [("result", "miss")])
        held = Gauge(label: kind.metric)
        self.capacity = capacity
        self.lifetime = lifetime
        self.logger = logger
    }

    /// The values of `ids` held here, and the epoch to keep what the caller fetches under (nil while
    /// the copy is not trusted: nothing is kept then).
    public func values(_ ids: [Int64]) -> (found: [Int64: Value], epoch: Epoch?) {
        counted(held(ids), asked: ids.count)
    }

    /// The values of `ids` held here for `viewer`'s read: none while the viewer is marked as a
    /// writer of this kind (``changed(_:by:)``), who is shown what Postgres has until every process
    /// has surely heard of their write.
    public func values(_ ids: [Int64], viewer: Int64?) async -> (found: [Int64: Value], epoch: Epoch?) {
        var result = held(ids)
        if let viewer, let writers, !result.found.isEmpty, await writers.isMarked(String(viewer)) { result.found = [:] }
        return counted(result, asked: ids.count)
    }

    private func held(_ ids: [Int64]) -> (found: [Int64: Value], epoch: Epoch?) {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard state.trusted else { return ([:], nil) }
            var found: [Int64: Value] = [:]
            for id in ids {
                guard let entry = state.values[id] else { continue }
                if entry.expires > now { found[id] = entry.value } else { state.values.removeValue(forKey: id) }
            }
            return (found, Epoch(value: state.epoch))
        }
    }

    private func counted(_ result: (found: [Int64: Value], epoch: Epoch?), asked: Int) -> (found: [Int64: Value], epoch: Epoch?) {
        if !result.found.isEmpty { hits.increment(by: result.found.count) }
        if result.found.count < asked { misses.increment(by: asked - result.found.count) }
        return result
    }

    /// Keeps `values`, fetched since `epoch`, unless something was forgotten since.
    public func keep(_ values: some Sequence<(key: Int64, value: Value)>, since epoch: Epoch?) {
        guard let epoch else { return }
        let expires = ContinuousClock.now + lifetime
        state.withLock { state in
            guard state.trusted, state.epoch == epoch.value else { return }
            for (id, value) in values {
                if state.values[id] == nil, state.values.count >= capacity { evict(&state) }
                state.lastKept += 1
                state.values[id] = Entry(value: value, expires: expires, kept: state.lastKept)
                state.order.append((id, state.lastKept))
            }
            // Stale places pile up as values are kept again or forgotten: past twice the capacity,
            // keep only the live ones.
            if state.order.count > 2 * capacity {
                state.order = CircularBuffer(state.order.filter { state.values[$0.id]?.kept == $0.kept })
            }
            held.record(state.values.count)
        }
    }

    /// Whether nothing was forgotten since `epoch`, while the copy stayed trusted.
    public func isCurrent(_ epoch: Epoch) -> Bool {
        state.withLock { $0.trusted && $0.epoch == epoch.value }
    }

    /// Makes room: drops the eighth of the entries kept longest ago (the nearest to expiring;
    /// expired ones go this way too, or when read).
    ///
    /// Not the first ones in the dictionary's order: that order follows the hash table's buckets,
    /// so dropping from its front again and again empties the same region while new values land
    /// everywhere. The rest of the table fills up into long runs of taken buckets that every lookup
    /// of a missing id walks to the end (docs/perf.md, "Choices in the code").
    private func evict(_ state: inout State) {
        var dropped = 0
        while dropped < max(1, capacity / 8), let (id, kept) = state.order.popFirst() {
            guard state.values[id]?.kept == kept else { continue }
            state.values[id] = nil
            dropped += 1
        }
    }

    // MARK: Watching

    /// Listens for announcements on `subscriber` until it shuts down; the copy is distrusted then.
    public func watch(on subscriber: RedisSubscriber) async {
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
                            metadata: ["local.kind": "\(self.kind.name)", "error": "\(error)"])
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

    /// Drops `ids`, which `writer`'s write changed, from this process at once (rather than wait for
    /// the announcement), and marks the writer when the copy marks writers. Call after the write
    /// committed, before answering.
    public func changed(_ ids: [Int64], by writer: Int64) async {
        forget(ids)
        await writers?.mark([String(writer)])
    }

    /// Drops `ids` at once: a writer does so for its own process rather than wait for its announcement.
    public func forget(_ ids: [Int64]) {
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
            state.order.removeAll()
            held.record(0)
        }
    }
}

/// Runs the watches of a process's copies (``LocalCopy/watch(on:)``) on one Redis subscriber, one
/// connection and one thread for them all, until the service group stops.
public struct LocalCopyWatch: Service {
    let redis: RedisClient
    let watches: [@Sendable (RedisSubscriber) async -> Void]
    let logger: Logger

    public init(redis: RedisClient, watches: [@Sendable (RedisSubscriber) async -> Void], logger: Logger) {
        self.redis = redis
        self.watches = watches
        self.logger = logger
    }

    public func run() async throws {
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

/// What a ``LocalCopy`` holds: it names the copy's channel and metrics.
public struct LocalCopyKind: Sendable {
    /// The service that keeps it, in its metrics' names.
    public let service: String
    /// The kind, in its metrics' names and in logs.
    public let name: String
    /// The channel's name without its database: `<channelPrefix>:<database>`.
    public let channelPrefix: String

    public init(service: String, name: String, channelPrefix: String) {
        self.service = service
        self.name = name
        self.channelPrefix = channelPrefix
    }

    var metric: String { "aviary_\(service)_local_\(name)" }

    public func channel(database: Int) -> String { "\(channelPrefix):\(database)" }

    /// Where the copy's writers are marked: `aviary:writer-marks:<service>:<kind>:<user>`.
    var writerMarkPrefix: String { "aviary:writer-marks:\(service):\(name):" }

    /// Tells every process's copy that `ids` changed, a thousand ids a `PUBLISH` (an account's
    /// erasure can name hundreds of thousands).
    public func announce(_ ids: [Int64], on redis: RedisClient) async throws {
        for start in stride(from: 0, to: ids.count, by: 1000) {
            _ = try await redis.send(announcement(of: ids[start..<min(start + 1000, ids.count)], on: redis.configuration))
        }
    }

    /// The `PUBLISH` that tells every process's copy that `ids` changed.
    public func announcement(of ids: some Sequence<Int64>, on redis: RedisConfiguration) -> [RedisArgument] {
        redis.publish(RedisArgument(ids.map { String($0) }.joined(separator: " ")), to: channel(database: redis.database))
    }

    /// The outbox relay's preparation (``OutboxRelay/Preparation``) that announces, for each of
    /// `kinds`, the ids a batch's events name as changed: one `PUBLISH` per kind that has any, all in
    /// one round trip, and the events go on unchanged. `fields` gives, by event type, the payload
    /// fields that hold such ids (id strings). Announcing from the relay costs one command per batch
    /// rather than one per write, and is as durable as the events: a writer that dies after its
    /// commit leaves them in the outbox, and a batch whose announcement fails is sent again. The
    /// writer drops the values from its own process's copy at once (``LocalCopy/forget(_:)``); other
    /// processes hear of them a moment after the commit. A payload that is not JSON names nothing:
    /// it must not hold the events back.
    public static func announcer(
        _ kinds: [(kind: LocalCopyKind, fields: [String: [String]])], redis: RedisClient
    ) -> OutboxRelay.Preparation {
        let configuration = redis.configuration
        return { events in
            let commands = kinds.compactMap { $0.kind.announcement(of: $0.fields, in: events, on: configuration) }
            guard !commands.isEmpty else { return events }
            for case .error(let message) in try await redis.pipeline(commands) {
                throw EventStreamFailure("Redis refused an announcement: \(message)")
            }
            return events
        }
    }

    /// The `PUBLISH` of the ids that `events` name in `fields`, or nil when they name none.
    private func announcement(of fields: [String: [String]], in events: [OutboxRelay.Event], on redis: RedisConfiguration) -> [RedisArgument]? {
        var ids = Set<Int64>()
        for event in events {
            guard let named = fields[event.type],
                let strings = RawJSON(unchecked: Array(event.payload.utf8)).strings(named: named)
            else { continue }
            for id in strings.values.compactMap({ Int64($0) }) { ids.insert(id) }
        }
        return ids.isEmpty ? nil : announcement(of: ids.sorted(), on: redis)
    }
}
