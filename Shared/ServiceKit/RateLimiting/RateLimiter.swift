import ChannelSupport
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

    /// One bucket: `limit` tokens, refilled completely over `per`.
    public struct Bucket: Sendable {
        public var key: String
        public var limit: Int
        public var per: Duration

        public init(key: String, limit: Int, per: Duration) {
            self.key = key
            self.limit = limit
            self.per = per
        }

        var periodMs: Int64 { max(1, per.milliseconds) }
    }

    /// What a take left of the tightest of its buckets, for `RateLimit-*` headers.
    public struct Outcome: Sendable, Equatable {
        /// Whether a token was taken from every bucket.
        public var allowed: Bool
        /// When refused: milliseconds until every bucket has a token again.
        public var retryAfterMs: Int64
        /// The tightest bucket's size, the whole tokens left in it, and the milliseconds until it is full.
        public var limit: Int
        public var remaining: Int
        public var resetMs: Int64

        /// The outcome of two takes as one: allowed when both were, refused for the longer wait,
        /// the tighter bucket's figures.
        func joined(with other: Outcome) -> Outcome {
            var tighter = Double(remaining) / Double(max(1, limit)) <= Double(other.remaining) / Double(max(1, other.limit)) ? self : other
            tighter.allowed = allowed && other.allowed
            tighter.retryAfterMs = tighter.allowed ? 0 : max(retryAfterMs, other.retryAfterMs)
            return tighter
        }
    }

    /// Takes `cost` tokens from each of `buckets` at once, or none when any has fewer (one round
    /// trip, atomic across instances). A cost above a bucket's size counts as its size. Throws
    /// `unavailable` when Redis cannot be reached.
    ///
    /// On a Redis Cluster, buckets whose keys lie in different slots are taken by one script call
    /// per slot, in the same round trip: a call one bucket refuses may then still have cost the
    /// others their tokens (one call's worth, only when refused).
    public func take(_ buckets: [Bucket], cost: Int = 1) async throws(RPCError) -> Outcome {
        var byKey: [String: Bucket] = [:]
        var keys: [String] = []
        for bucket in buckets where byKey.updateValue(bucket, forKey: prefix + bucket.key) == nil { keys.append(prefix + bucket.key) }
        guard !keys.isEmpty else { return Outcome(allowed: true, retryAfterMs: 0, limit: 0, remaining: 0, resetMs: 0) }
        let calls = redis.batches(of: keys, upTo: keys.count).map { keys in
            (
                keys: keys,
                arguments: [RedisArgument(max(1, cost))]
                    + keys.flatMap { [RedisArgument(max(1, byKey[$0]?.limit ?? 1)), RedisArgument(byKey[$0]?.periodMs ?? 1)] }
            )
        }
        let replies: [RESPValue]
        do {
            replies = try await redis.evaluateEach(Self.script, calls)
            try RedisError.throwFirstRefusal(in: replies)
        } catch {
            logger.warning("a rate limit could not be checked", metadata: ["error": "\(String(reflecting: error))"])
            throw (error as? RedisError)?.rpcError ?? RPCError.unavailable("the rate limiter is unavailable; retry shortly")
        }
        var outcome: Outcome?
        for reply in replies {
            guard let values = reply.array?.compactMap(\.int), values.count == 5 else {
                logger.error("the rate limit script answered in an unexpected shape", metadata: ["reply": "\(reply)"])
                throw RPCError.internalError()
            }
            let part = Outcome(
                allowed: values[0] == 1, retryAfterMs: Int64(max(values[0] == 1 ? 0 : 1, values[1])), limit: values[2],
                remaining: values[3], resetMs: Int64(values[4]))
            outcome = outcome.map { $0.joined(with: part) } ?? part
        }
        guard let outcome else { throw RPCError.internalError() }
        return outcome
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
        let outcome = try await take([Bucket(key: key, limit: limit, per: per)])
        if !outcome.allowed {
            throw RPCError.rateLimited(retryAfterMs: outcome.retryAfterMs, message)
        }
    }

    /// KEYS the buckets; ARGV[1] the cost; ARGV[2i] bucket i's size, ARGV[2i+1] the milliseconds in
    /// which it refills completely. The cost is taken from every bucket when each holds it (at most
    /// its size), from none otherwise.
    /// Returns {allowed (1 or 0), ms until every bucket has a token (0 when allowed), then the
    /// tightest bucket's size, whole tokens left and ms until full}. Time comes from the Redis
    /// server, so instances with skewed clocks agree.
    static let script = RedisScript(
        """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        local cost = tonumber(ARGV[1])
        local buckets = {}
        local allowed = 1
        local retry = 0
        for i, key in ipairs(KEYS) do
          local capacity = tonumber(ARGV[2 * i])
          local period = tonumber(ARGV[2 * i + 1])
          local state = redis.call('HMGET', key, 'tokens', 'at')
          local tokens = tonumber(state[1])
          local at = tonumber(state[2])
          if tokens == nil or at == nil then
            tokens = capacity
            at = now
          end
          local rate = capacity / period
          tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
          local need = math.min(cost, capacity)
          if tokens < need then
            allowed = 0
            retry = math.max(retry, math.ceil((need - tokens) / rate))
          end
          buckets[i] = {key, capacity, period, rate, tokens, need}
        end
        local tight = nil
        for _, b in ipairs(buckets) do
          if allowed == 1 then b[5] = b[5] - b[6] end
          redis.call('HSET', b[1], 'tokens', string.format('%.6f', b[5]), 'at', string.format('%.0f', now))
          redis.call('PEXPIRE', b[1], math.ceil(b[3]))
          if tight == nil or b[5] / b[2] < tight[5] / tight[2] then tight = b end
        end
        return {allowed, retry, tight[2], math.max(0, math.floor(tight[5])), math.ceil((tight[2] - tight[5]) / tight[4])}
        """)
}
