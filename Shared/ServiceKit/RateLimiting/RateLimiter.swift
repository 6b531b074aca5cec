import Logging
import RPC
import Redis

/// Limits how often something may happen, shared by every instance of a service: one token bucket
/// per key in Redis, refilled continuously at `limit` tokens per `per`, updated atomically by a Lua
/// script (one round trip, no read-modify-write race between instances).
///
/// A bucket starts full, so a burst of `limit` calls passes at once; after that calls pass at the
/// refill rate. A refused call costs nothing and says, in `retryAfterMs`, when one token will be back.
public struct RateLimiter: Sendable {
    private let redis: RedisClient
    private let prefix: String
    private let logger: Logger

    /// - Parameters:
    ///   - prefix: put before every key, so that unrelated limits never share a bucket.
    ///   - logger: where a failure's cause is told (the caller only learns it was refused).
    public init(redis: RedisClient, prefix: String = "aviary:rate:", logger: Logger) {
        self.redis = redis
        self.prefix = prefix
        self.logger = logger
    }

    /// Takes one token from the bucket `key`, or throws `rate_limited` with `retryAfterMs`.
    ///
    /// When Redis cannot be reached the call is refused as `unavailable`: a limit that protects
    /// passwords must not silently stop limiting.
    /// - Parameters:
    ///   - limit: the bucket's size, and how many tokens come back over `per`; at least 1.
    ///   - message: what the refused caller reads, e.g. "too many sign-in attempts for this account".
    public func check(key: String, limit: Int, per: Duration, message: String = "too many calls; retry later")
        async throws(RPCError)
    {
        let periodMs = max(1, per.components.seconds * 1000 + per.components.attoseconds / 1_000_000_000_000_000)
        let reply: RESPValue
        do {
            reply = try await redis.evaluate(
                Self.script, keys: [prefix + key], arguments: [RedisArgument(max(1, limit)), RedisArgument(periodMs)])
        } catch {
            logger.warning("a rate limit could not be checked", metadata: ["error": "\(String(reflecting: error))"])
            throw (error as? RedisError)?.rpcError ?? RPCError.unavailable("the rate limiter is unavailable; retry shortly")
        }
        guard let values = reply.array, values.count == 2, let allowed = values[0].int, let retryAfter = values[1].int else {
            logger.error("the rate limit script answered in an unexpected shape", metadata: ["reply": "\(reply)"])
            throw RPCError.internalError()
        }
        if allowed != 1 {
            throw RPCError.rateLimited(retryAfterMs: Int64(max(1, retryAfter)), message)
        }
    }

    /// KEYS[1] the bucket; ARGV[1] its size, ARGV[2] the milliseconds in which it refills completely.
    /// Returns {1, 0} when a token was taken, {0, ms until the next token} otherwise. Time comes from
    /// the Redis server, so instances with skewed clocks agree.
    static let script = RedisScript(
        """
        local capacity = tonumber(ARGV[1])
        local period = tonumber(ARGV[2])
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
        local tokens = tonumber(state[1])
        local at = tonumber(state[2])
        if tokens == nil or at == nil then
          tokens = capacity
          at = now
        end
        local rate = capacity / period
        tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
        local allowed = 0
        local retry = 0
        if tokens >= 1 then
          tokens = tokens - 1
          allowed = 1
        else
          retry = math.ceil((1 - tokens) / rate)
        end
        redis.call('HSET', KEYS[1], 'tokens', string.format('%.6f', tokens), 'at', string.format('%.0f', now))
        redis.call('PEXPIRE', KEYS[1], math.ceil(period))
        return {allowed, retry}
        """)
}
