import AviaryJSON
import ChannelSupport
import Foundation
import Locking
import Logging
import RPC
import Redis

/// Sessions ended by logout or a password change.
///
/// Redis keeps them in the sorted set `aviary:revoked-sessions`: each session id with the time its
/// tokens have all expired (milliseconds since 1970), so a check is one `ZSCORE`. Each revocation is
/// also announced on the channel `aviary:revoked-sessions:<database>` (channels are shared by every
/// database of a server, and session ids of two deployments on one server may coincide).
///
/// The set is a copy: auth's sessions table says which sessions ended. While the set holds every
/// revocation still in force, its member ``wholeMarker`` says so; a set without it (Redis restarted
/// empty, or flushed) is put back by auth from the table (``restore(sessionIDs:)``) within a second,
/// so that a revoked token does not pass again. A revocation is answered once `replicaAcknowledgements`
/// replicas have it (`WAIT`, as the outbox relays wait for their events), so a failover to a replica
/// keeps every revocation that was answered; one that could not be confirmed fails, and is retried
/// by its caller (auth's sessions table and the set stay as they were for a password change, which
/// announces before it commits; a logout may be called again).
///
/// A process that runs ``watch(logger:)`` keeps the set in memory and checks tokens without a round
/// trip. It trusts its copy only while it can vouch that the copy is current:
/// - after loading the set, which it does once its subscription is confirmed;
/// - while the subscription stays up and has dropped nothing;
/// - while its own heartbeat, published every `heartbeatInterval`, comes back through the
///   subscription before the next one leaves (which catches a connection that died silently).
/// Otherwise each check asks Redis, as a process without a watch always does. A revocation reaches
/// the other processes as fast as Redis pub/sub carries it; the revoking process knows it at once.
///
/// When Redis cannot answer a check, the copy still does for ``staleWindow`` after it was last
/// vouched for (`AVIARY_REVOCATION_STALE_MS`): a Redis blip does not sign everybody out, at the price
/// that a revocation made in that window may not apply until Redis is back. Past it, checks fail
/// closed (the error is thrown).
public final class SessionRevocations: Sendable {
    static let key = "aviary:revoked-sessions"
    private let channel: String

    private let redis: RedisClient
    private let tokenLifetime: Duration
    /// The replicas that must have a revocation before it is answered (`AVIARY_REDIS_REPLICA_ACKS`).
    private let replicaWait: RedisReplicaWait
    private let heartbeatInterval: Duration
    /// How long after it was last vouched for the copy answers checks that Redis cannot.
    public let staleWindow: Duration
    private let instance = UUID().uuidString
    private let state = Locked(State())
    /// The streams of ``endedSessions()``; unbounded, since revocations are rare and one dropped
    /// would leave a live subscription open.
    private let ended = Broadcast<[Int64]>()

    private struct State {
        /// Revoked session → when its tokens have all expired (ms).
        var revoked: [Int64: Int64] = [:]
        /// Whether `revoked` is known to be current.
        var trusted = false
        /// When `revoked` was last known to be current (ms): loaded, or a heartbeat back while trusted.
        var vouchedAt: Int64?
        /// Bumped whenever trust is lost, so a load that started before does not restore it.
        var epoch = 0
        /// The heartbeat sent and not yet seen back.
        var pendingBeat: String?
        var beats = 0
    }

    /// The default ``staleWindow``.
    public static let defaultStaleWindow = Duration.seconds(30)

    public init(
        redis: RedisClient, tokenLifetime: Duration, heartbeatInterval: Duration = .seconds(1),
        staleWindow: Duration = SessionRevocations.defaultStaleWindow, replicaAcknowledgements: Int = 0
    ) {
        self.redis = redis
        self.tokenLifetime = tokenLifetime
        replicaWait = RedisReplicaWait(replicas: replicaAcknowledgements)
        self.heartbeatInterval = heartbeatInterval
        self.staleWindow = staleWindow
        channel = "\(Self.key):\(redis.configuration.database)"
    }

    /// The member of the set that says it holds every revocation still in force. Its score, +inf,
    /// keeps it from the sweep of expired members, and a reader skips it (not a session id).
    static let wholeMarker = "whole"

    /// Ends `sessionIDs` everywhere: their tokens are refused from now on.
    public func revoke(sessionIDs: [Int64]) async throws {
        guard !sessionIDs.isEmpty else { return }
        try await add(sessionIDs, whole: false)
    }

    /// Whether the set in Redis holds every revocation still in force (it has ``wholeMarker``).
    public func isWhole() async throws -> Bool {
        !(try await redis.send(["ZSCORE", RedisArgument(Self.key), RedisArgument(Self.wholeMarker)]).isNull)
    }

    /// Puts `sessionIDs`, every session ended within a token's lifetime (auth reads them from its
    /// sessions table), back into the set, announced as ``revoke(sessionIDs:)`` announces, and marks
    /// the set whole.
    public func restore(sessionIDs: [Int64]) async throws {
        try await add(sessionIDs, whole: true)
    }

    private func add(_ sessionIDs: [Int64], whole: Bool) async throws {
        let now = Date().millisecondsSince1970
        let expiry = now + tokenLifetime.components.seconds * 1000 + 60_000
        state.withLock { state in
            for id in sessionIDs { state.revoked[id] = max(state.revoked[id] ?? 0, expiry) }
        }
        if !sessionIDs.isEmpty { ended.yield(sessionIDs) }
        let ids = sessionIDs.map { String($0) }
        var members = ids.flatMap { [RedisArgument(expiry), RedisArgument($0)] }
        if whole { members += ["+inf", RedisArgument(Self.wholeMarker)] }
        var commands: [[RedisArgument]] = [
            ["ZADD", RedisArgument(Self.key)] + members,
            ["ZREMRANGEBYSCORE", RedisArgument(Self.key), "-inf", RedisArgument(now)],
        ]
        if !ids.isEmpty {
            commands.append(redis.configuration.publish(RedisArgument((["r", String(expiry)] + ids).joined(separator: " ")), to: channel))
        }
        commands += replicaWait.commands
        let replies = try await redis.pipeline(commands)
        // A refused ZADD (a replica not writable during a failover) stored nothing.
        try RedisError.throwFirstRefusal(in: replies)
        if !replicaWait.commands.isEmpty, let last = replies.last, let shortfall = replicaWait.shortfall(last, confirming: "the ended session") {
            throw RPCError.unavailable("\(shortfall); retry shortly")
        }
    }

    /// Whether `sessionID` was revoked: from memory while the watch vouches for it, else from Redis;
    /// from memory again while Redis cannot answer, within ``staleWindow`` of the copy's last vouching.
    /// - Throws: Redis' error when it cannot answer and the copy is older than that, or never was
    ///   current; any other failure of Redis (one that is not about reaching it) as it is.
    public func isRevoked(sessionID: Int64) async throws -> Bool {
        let now = Date().millisecondsSince1970
        let known: Bool? = state.withLock { state in
            guard state.trusted else { return nil }
            return (state.revoked[sessionID] ?? 0) > now
        }
        if let known { return known }
        do {
            let score = try await redis.send(["ZSCORE", RedisArgument(Self.key), RedisArgument(sessionID)])
            return (score.string.flatMap { Double($0) } ?? 0) > Double(now)
        } catch let error as RedisError where error.isTransient {
            let window = staleWindow.milliseconds
            let stale: Bool? = state.withLock { state in
                guard let vouched = state.vouchedAt, now - vouched <= window else { return nil }
                return (state.revoked[sessionID] ?? 0) > now
            }
            guard let stale else { throw error }
            return stale
        }
    }

    /// Whether this process already knows `sessionID` to be revoked, without asking Redis: for a
    /// subscription opened while ``endedSessions()`` announced its session.
    public func isKnownRevoked(sessionID: Int64) -> Bool {
        let now = Date().millisecondsSince1970
        return state.withLock { ($0.revoked[sessionID] ?? 0) > now }
    }

    /// The sessions this process learns are revoked, in batches: by ``revoke(sessionIDs:)`` here, by
    /// another process's announcement, and, after the watch could not vouch for its copy, every
    /// revoked session again once it has reloaded the set (it may have missed some meanwhile). For
    /// what outlives a single call, such as a live subscription, which must end with its session.
    public func endedSessions() -> AsyncStream<[Int64]> {
        ended.stream()
    }

    /// Whether checks are answered from memory now (for tests and diagnostics).
    public var isWatching: Bool {
        state.withLock { $0.trusted }
    }

    // MARK: Watching

    /// Keeps the in-memory copy current until the task is cancelled.
    public func watch(logger: Logger) async {
        let subscriber = RedisSubscriber(configuration: redis.configuration, logger: logger)
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { tasks in
                tasks.addTask {
                    for await event in subscriber.events() where event == .disconnected { self.distrust() }
                }
                tasks.addTask {
                    guard
                        let subscription = await subscriber.subscribeRetrying(self.channel, bufferSize: 4096, onRetry: { error in
                            logger.warning("cannot watch session revocations yet; checking each in Redis", metadata: ["error": "\(error)"])
                        })
                    else { return }
                    await withDiscardingTaskGroup { work in
                        work.addTask { await self.sendHeartbeats() }
                        var dropped = 0
                        for await message in subscription {
                            if subscription.droppedMessageCount != dropped {
                                dropped = subscription.droppedMessageCount
                                self.distrust()
                            }
                            await self.receive(message.payload, logger: logger)
                        }
                        work.cancelAll()
                    }
                }
            }
        } onCancel: {
            Task { await subscriber.shutdown() }
        }
        await subscriber.shutdown()
        distrust()
    }

    /// Publishes a heartbeat every `heartbeatInterval` until cancelled. Each is sent on its own, so
    /// that a Redis that holds one up cannot hold up the check of the next.
    private func sendHeartbeats() async {
        await withDiscardingTaskGroup { beats in
            while !Task.isCancelled {
                let beat = nextBeat()
                beats.addTask {
                    _ = try? await self.redis.send(self.redis.configuration.publish(RedisArgument("b " + beat), to: self.channel))
                }
                try? await Task.sleep(for: heartbeatInterval)
            }
        }
    }

    private func distrust() {
        state.withLock { state in
            state.trusted = false
            state.epoch += 1
        }
    }

    /// The next heartbeat to send; one still missing means the subscription cannot be vouched for.
    /// Also forgets revocations whose tokens have all expired.
    private func nextBeat() -> String {
        let now = Date().millisecondsSince1970
        return state.withLock { state in
            if state.pendingBeat != nil {
                state.trusted = false
                state.epoch += 1
            }
            state.revoked = state.revoked.filter { $0.value > now }
            state.beats += 1
            let beat = "\(instance):\(state.beats)"
            state.pendingBeat = beat
            return beat
        }
    }

    /// Applies a message of the channel: a revocation (`r <expiry> <id>…`) or a heartbeat (`b <beat>`).
    private func receive(_ payload: [UInt8], logger: Logger) async {
        let words = String(decoding: payload, as: UTF8.self).split(separator: " ")
        guard words.count >= 2 else { return }
        switch words[0] {
        case "r":
            guard let expiry = Int64(words[1]) else { return }
            let ids = words.dropFirst(2).compactMap { Int64($0) }
            state.withLock { state in
                for id in ids { state.revoked[id] = max(state.revoked[id] ?? 0, expiry) }
            }
            ended.yield(ids)
        case "b":
            let epoch: Int? = state.withLock { state in
                guard state.pendingBeat == String(words[1]) else { return nil }
                state.pendingBeat = nil
                if state.trusted { state.vouchedAt = Date().millisecondsSince1970 }
                return state.trusted ? nil : state.epoch
            }
            if let epoch { await load(since: epoch, logger: logger) }
        default:
            return
        }
    }

    /// Loads the set from Redis and trusts the copy, unless trust was lost meanwhile. Every
    /// revocation is in the set before it is announced, and the subscription was live when the
    /// load began, so nothing falls between the two.
    private func load(since epoch: Int, logger: Logger) async {
        let now = Date().millisecondsSince1970
        let reply: RESPValue
        do {
            reply = try await redis.send(["ZRANGEBYSCORE", RedisArgument(Self.key), RedisArgument(now), "+inf", "WITHSCORES"])
        } catch {
            logger.warning("cannot load session revocations; checking each in Redis", metadata: ["error": "\(error)"])
            return
        }
        let values = reply.array ?? []
        var loaded: [Int64: Int64] = [:]
        for index in stride(from: 0, to: values.count - 1, by: 2) {
            guard let id = values[index].string.flatMap({ Int64($0) }),
                let expiry = values[index + 1].string.flatMap({ Double($0) })
            else { continue }
            loaded[id] = Int64(expiry)
        }
        state.withLock { state in
            state.revoked.merge(loaded) { max($0, $1) }
            if state.epoch == epoch {
                state.trusted = true
                state.vouchedAt = now
            }
        }
        if !loaded.isEmpty { ended.yield(Array(loaded.keys)) }
    }
}
