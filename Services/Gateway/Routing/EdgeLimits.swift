import Logging
import Metrics
import RPC
import ServiceKit

/// The edge's call limits: a token bucket per client address and one per user, in Redis, shared by
/// every gateway instance. While Redis cannot be asked, calls pass (and are counted in
/// `aviary_gateway_limits_unchecked_total`): these limits shield the services from floods, and
/// the sign-in limits that guard passwords are auth's own, which fail closed.
struct EdgeLimits: Sendable {
    let limiter: RateLimiter
    let settings: GatewaySettings
    let logger: Logger
    private let unchecked = Counter(label: "aviary_gateway_limits_unchecked_total")
    private let refused = Counter(label: "aviary_gateway_limited_total")

    init(limiter: RateLimiter, settings: GatewaySettings, logger: Logger) {
        self.limiter = limiter
        self.settings = settings
        self.logger = logger
    }

    /// Takes `cost` calls from the caller's buckets; nil when they could not be checked.
    func take(address: String?, user: Int64?, cost: Int) async -> RateLimiter.Outcome? {
        var buckets: [RateLimiter.Bucket] = []
        if let address {
            buckets.append(.init(key: "gateway:address:\(address)", limit: settings.callsPerAddressPerMinute, per: .seconds(60)))
        }
        if let user {
            buckets.append(.init(key: "gateway:user:\(user)", limit: settings.callsPerUserPerMinute, per: .seconds(60)))
        }
        guard !buckets.isEmpty else { return nil }
        do {
            let outcome = try await limiter.take(buckets, cost: cost)
            if !outcome.allowed { refused.increment() }
            return outcome
        } catch {
            unchecked.increment()
            return nil
        }
    }

    /// The JSON-RPC error of a refused take.
    static func refusal(_ outcome: RateLimiter.Outcome) -> RPCError {
        .rateLimited(
            retryAfterMs: outcome.retryAfterMs,
            "too many calls from this client (at most \(outcome.limit) a minute); retry in \(outcome.retryAfterMs) ms")
    }
}
