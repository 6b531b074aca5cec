import ChannelSupport

/// `WAIT replicas timeout`, sent after writes in their pipeline: the writes are answered only once
/// `replicas` replicas have them, so that a failover keeps them (the outbox relays' events, the
/// revoked sessions).
public struct RedisReplicaWait: Sendable {
    /// How long a wait lasts by default: below the Redis command timeout (1 s), which would
    /// otherwise cut the wait short and drop the connection.
    public static let defaultTimeout = Duration.milliseconds(500)

    public var replicas: Int
    public var timeout: Duration

    public init(replicas: Int, timeout: Duration = RedisReplicaWait.defaultTimeout) {
        self.replicas = replicas
        self.timeout = timeout
    }

    /// The command; none when no replica is asked for.
    public var commands: [[RedisArgument]] {
        replicas > 0 ? [["WAIT", RedisArgument(replicas), RedisArgument(timeout.milliseconds)]] : []
    }

    /// Why `reply`, the `WAIT`'s, falls short ("0 of 1 Redis replicas confirmed … within 500 ms");
    /// nil when enough replicas confirmed. `what` names the writes.
    public func shortfall(_ reply: RESPValue, confirming what: String) -> String? {
        let confirmed = reply.int ?? 0
        guard confirmed < replicas else { return nil }
        return "\(confirmed) of \(replicas) Redis replicas confirmed \(what) within \(timeout)"
    }
}
