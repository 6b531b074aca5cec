import ChannelSupport
import Locking
import Redis

/// Shares the partitions of one piece of work (a consumer group per partition, each held by one
/// instance at a time through its lease) among the instances running it, evenly and without a
/// coordinator: each instance keeps itself in a Redis sorted set of live members (a heartbeat, its
/// entry expiring after `lifetime`), and the partitions are dealt out in turn over the members in
/// name order. When instances come or go, partitions change hands: a consumer whose instance no
/// longer owns its partition gives its lease up, and the new owner's consumer takes it
/// (``EventStreamConsumer/Options/mayHoldLease``), claiming what was left pending.
public final class PartitionMembership: Sendable {
    private struct State {
        var members: [String] = []
        var refreshed: ContinuousClock.Instant?
        var refresh: Task<[String]?, Never>?
    }

    private let redis: RedisClient
    private let key: String
    private let member: String
    private let heartbeat: Duration
    private let lifetime: Duration
    private let state = Locked(State())

    /// - Parameters:
    ///   - work: names the work (`notifications`); the members' set is `aviary:events:members:<work>`.
    ///   - member: this instance's name, unique among the live ones (``EventStreamConsumer/consumerName(service:nodeID:)``).
    ///   - heartbeat: how often the instance renews its entry and reads the others'.
    ///   - lifetime: how long an entry outlives its last heartbeat: an instance that died has its
    ///     partitions taken over within this (and the partitions' lease).
    public init(redis: RedisClient, work: String, member: String, heartbeat: Duration = .seconds(1), lifetime: Duration = .seconds(5)) {
        self.redis = redis
        self.key = "aviary:events:members:\(work)"
        self.member = member
        self.heartbeat = heartbeat
        self.lifetime = lifetime
    }

    /// Whether this instance owns `partition` by the members it knows (read again when older than
    /// the heartbeat). When Redis cannot be asked, what was known last stands, and with nothing
    /// known it owns every partition: the leases still keep one consumer per partition.
    public func owns(_ partition: Int) async -> Bool {
        let members = await currentMembers()
        guard !members.isEmpty else { return true }
        return Self.owner(of: partition, among: members) == member
    }

    /// The member that owns `partition`: with the members sorted, the `partition % count`-th, so
    /// that k members own N partitions N/k each (rounded). Every instance reads the same set, so
    /// they agree once their reads are a heartbeat old.
    static func owner(of partition: Int, among members: [String]) -> String? {
        members.isEmpty ? nil : members[partition % members.count]
    }

    private func currentMembers() async -> [String] {
        let now = ContinuousClock.now
        let (known, task) = state.withLock { state -> ([String], Task<[String]?, Never>?) in
            if let refreshed = state.refreshed, refreshed.duration(to: now) < heartbeat { return (state.members, nil) }
            if let running = state.refresh { return (state.members, running) }
            let task = Task { try? await self.beat() }
            state.refresh = task
            return (state.members, task)
        }
        guard let task else { return known }
        let read = await task.value
        return state.withLock { state in
            if state.refresh == task {
                state.refresh = nil
                state.refreshed = now
                if let read { state.members = read }
            }
            return state.members
        }
    }

    /// Renews this member's entry, drops the expired ones and reads who is left, in one script
    /// (the server's clock, so that instances with skewed clocks agree).
    private func beat() async throws -> [String] {
        let reply = try await redis.evaluate(
            Self.beatScript, keys: [key], arguments: [RedisArgument(member), RedisArgument(lifetime.milliseconds)])
        return (reply.array ?? []).compactMap(\.string).sorted()
    }

    private static let beatScript = RedisScript(
        """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
        redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
        return redis.call('ZRANGE', KEYS[1], 0, -1)
        """)
}
