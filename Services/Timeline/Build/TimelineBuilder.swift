import Foundation
import Locking
import Logging
import Metrics
import Redis

/// Rebuilds a missing timeline set from its source of truth (the tweets and social-graph services),
/// once per set at a time: one build per set in this process (``BuildGate``) and one across instances
/// (a Redis lock with a token). Readers that lose the race wait for the winner's set.
///
/// A build first marks the set as being built, so that fan-out adds to it from then on, then reads
/// its source and merges what it read with what fan-out added: a tweet posted during the build is
/// never lost, whichever side saw it.
struct TimelineBuilder: Sendable {
    let redis: RedisClient
    let capacity: Int
    let logger: Logger
    let gate = BuildGate()
    /// The builds reads start and do not wait for.
    let background: BackgroundBuilds
    /// How long each build that ran took, from its lock to its set's last write.
    private let duration = Metrics.Timer(label: "aviary_timeline_build_seconds")
    /// Long enough for any build; a builder that dies holding the lock holds it this long.
    static let lockLifetime: Duration = .seconds(15)
    /// How long a reader waits for another instance's build before building the set itself.
    static let longestWait: Duration = .seconds(5)

    /// What a build stores: the newest ids (at most the capacity), and whether they are all there is.
    struct Contents: Sendable {
        var ids: [Int64]
        var whole: Bool

        /// The newest `count` ids strictly before `before`, as a read of the set built from these
        /// contents would answer; nil when the page runs past their oldest id and older ones exist.
        func page(before: Int64?, count: Int) -> TimelineIDs? {
            let newestFirst = ids.sorted(by: >)
            let start = before.map { cursor in newestFirst.firstIndex { $0 < cursor } ?? newestFirst.count } ?? 0
            let page = Array(newestFirst[start...].prefix(count))
            guard page.count == count || whole else { return nil }
            return TimelineIDs(ids: page, more: page.count == count && (start + count < newestFirst.count || !whole))
        }
    }

    init(redis: RedisClient, capacity: Int, rebuilds: Int, logger: Logger) {
        self.redis = redis
        self.capacity = capacity
        self.logger = logger
        background = BackgroundBuilds(limit: rebuilds)
    }

    /// Has `key` built as ``build(_:lifetime:source:)`` does, in the background (``BackgroundBuilds``).
    /// A build that fails is logged; the next read of the set starts another.
    func buildLater(_ key: String, lifetime: Int, source: @escaping @Sendable () async throws -> Contents?) {
        background.start(key) { [self] in
            do {
                _ = try await build(key, lifetime: lifetime, source: source)
            } catch {
                logger.warning("a timeline build failed", metadata: ["timeline.key": "\(key)", "error": "\(error)"])
            }
        }
    }

    /// Builds `key` now, in the caller's task, when a slot of the background builds is free
    /// (``BackgroundBuilds/runNowIfFree(_:_:)``), as ``build(_:lifetime:source:)`` does with the
    /// `contents` of what `source` reads. Returns what `source` read, for the caller to answer from;
    /// nil when no slot was free, when `source` was not read here (the set was built meanwhile), or
    /// when it returned nil.
    func buildNowIfFree<Read: Sendable>(
        _ key: String, lifetime: Int, source: @escaping @Sendable () async throws -> Read?,
        contents: @escaping @Sendable (Read) -> Contents
    ) async throws -> Read? {
        let read = SourceRead<Read>()
        let ran = try await background.runNowIfFree(key) {
            try await build(key, lifetime: lifetime) {
                let value = try await source()
                read.value.withLock { $0 = value }
                return value.map(contents)
            }
        }
        guard ran != nil else { return nil }
        return read.value.withLock { $0 }
    }

    /// What a build's source read, kept for the caller of ``buildNowIfFree(_:lifetime:source:contents:)``.
    private final class SourceRead<Read: Sendable>: Sendable {
        let value = Locked<Read?>(nil)
    }

    /// Builds `key` unless it is complete, giving it the lifetime `lifetime` seconds. `source`
    /// returns the contents, or nil when the timeline has no owner (the build is dropped).
    /// Returns false only when `source` returned nil.
    func build(_ key: String, lifetime: Int, source: @escaping @Sendable () async throws -> Contents?) async throws -> Bool {
        try await gate.once(key) {
            let token = UUID().uuidString
            let lock = TimelineKeys.buildLock(key)
            let locked = try await acquire(lock, token: token, waitingFor: key)
            do {
                let result = try await buildLocked(key, lifetime: lifetime, source: source)
                if locked { _ = try? await redis.evaluate(TimelineScripts.deleteIfHolding, keys: [lock], arguments: [RedisArgument(token)]) }
                return result
            } catch {
                if locked { _ = try? await redis.evaluate(TimelineScripts.deleteIfHolding, keys: [lock], arguments: [RedisArgument(token)]) }
                throw error
            }
        }
    }

    private func buildLocked(_ key: String, lifetime: Int, source: @Sendable () async throws -> Contents?) async throws -> Bool {
        let began = try await redis.evaluate(TimelineScripts.beginBuild, keys: [key], arguments: [RedisArgument(lifetime)])
        guard began.int == 1 else { return true }
        let started = ContinuousClock.now
        defer { duration.record(duration: ContinuousClock.now - started) }
        guard let contents = try await source() else {
            // Nothing to build: the timeline goes unless fan-out added to it meanwhile.
            let empty = RedisArgument([PackedTimeline.State.building.rawValue])
            _ = try await redis.evaluate(TimelineScripts.deleteIfHolding, keys: [key], arguments: [empty])
            return false
        }
        _ = try await redis.evaluate(
            TimelineScripts.finishBuild, keys: [key],
            arguments: [
                RedisArgument(capacity), RedisArgument(lifetime), contents.whole ? "1" : "0",
                RedisArgument(PackedTimeline.pack(Array(Set(contents.ids)).sorted())),
            ])
        return true
    }

    /// Takes the lock of `key`'s build; while another instance holds it, waits for the set to become
    /// ready. Returns whether this caller holds the lock (false: the set is ready, or the wait was
    /// too long and the caller builds anyway, which the merge makes safe).
    private func acquire(_ lock: String, token: String, waitingFor key: String) async throws -> Bool {
        let deadline = ContinuousClock.now + Self.longestWait
        while true {
            let reply = try await redis.send([
                "SET", RedisArgument(lock), RedisArgument(token), "NX", "PX",
                RedisArgument(Int(Self.lockLifetime.components.seconds) * 1000),
            ])
            if reply == .simpleString("OK") { return true }
            // In place: a set of the layout before answers WRONGTYPE, and is not ready.
            let state = try await redis.pipeline([["GETRANGE", RedisArgument(key), 0, 0]])[0]
            if case .ready = TimelineState(stateByte: state.bytes) { return false }
            if ContinuousClock.now >= deadline {
                logger.warning("a timeline build by another instance takes too long; building it here too", metadata: ["timeline.key": "\(key)"])
                return false
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
