import Locking
import Logging
import Metrics
import RPC
import ServiceKit

/// The edge's call limits: a token bucket per client address and one per user, in Redis, shared by
/// every gateway instance. While Redis cannot be asked, calls pass (and are counted in
/// `aviary_gateway_limits_unchecked_total`): these limits shield the services from floods, and
/// the sign-in limits that guard passwords are auth's own, which fail closed.
///
/// A round trip to Redis for every call would cost as much as the call's own hop, so a take asks
/// for a few more tokens than it needs (``leaseSize``) and the instance spends the rest itself for
/// up to ``leaseLifetime``, each bucket's lease on its own (the users behind one address share
/// that address's lease). Unspent leased tokens are not given back: a client of several instances
/// may be held to a little less than its limit, never to more.
final class EdgeLimits: Sendable {
    /// A take's tokens beyond its own cost: a twentieth of the smaller limit, at most 32.
    let leaseSize: Int
    static let leaseLifetime = Duration.seconds(1)
    /// Leases kept before the expired ones are swept.
    static let sweepAbove = 10_000

    private struct Lease {
        var left: Int
        /// Redis's answer when the lease was taken.
        var outcome: RateLimiter.Outcome
        var until: ContinuousClock.Instant
    }

    private let limiter: RateLimiter
    private let settings: GatewaySettings
    private let leases = Locked<[String: Lease]>([:])
    private let unchecked = Counter(label: "aviary_gateway_limits_unchecked_total")
    private let refused = Counter(label: "aviary_gateway_limited_total")

    init(limiter: RateLimiter, settings: GatewaySettings) {
        self.limiter = limiter
        self.settings = settings
        leaseSize = min(32, min(settings.callsPerAddressPerMinute, settings.callsPerUserPerMinute) / 20)
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
        let now = ContinuousClock.now
        // Each bucket has its lease (many users behind one address share that address's), and
        // only the buckets whose lease does not cover the cost are asked of Redis.
        let (covered, missing) = leases.withLock { leases in
            var covered: [RateLimiter.Outcome] = []
            var missing: [RateLimiter.Bucket] = []
            for bucket in buckets {
                if let lease = leases[bucket.key], lease.until > now, lease.left >= cost {
                    var outcome = lease.outcome
                    outcome.remaining += lease.left - cost
                    covered.append(outcome)
                } else {
                    missing.append(bucket)
                }
            }
            if missing.isEmpty { for bucket in buckets { leases[bucket.key]?.left -= cost } }
            return (covered, missing)
        }
        if missing.isEmpty { return Self.tightest(covered) }
        do {
            var outcome = try await limiter.take(missing, cost: cost + leaseSize)
            var extra = leaseSize
            if !outcome.allowed, leaseSize > 0 {
                // Near the limit: just what the call needs.
                outcome = try await limiter.take(missing, cost: cost)
                extra = 0
            }
            guard outcome.allowed else {
                refused.increment()
                return outcome
            }
            let fresh = Lease(left: extra, outcome: outcome, until: now + Self.leaseLifetime)
            let spent = leases.withLock { leases -> [RateLimiter.Outcome] in
                if leases.count > Self.sweepAbove { leases = leases.filter { $0.value.until > now } }
                for bucket in missing { leases[bucket.key] = fresh }
                // The covered buckets pay now; one whose lease ran out meanwhile lets this call pass.
                return buckets.filter { bucket in !missing.contains { $0.key == bucket.key } }.compactMap { bucket in
                    guard var lease = leases[bucket.key] else { return nil }
                    lease.left = max(0, lease.left - cost)
                    leases[bucket.key] = lease
                    var outcome = lease.outcome
                    outcome.remaining += lease.left
                    return outcome
                }
            }
            outcome.remaining += extra
            return Self.tightest(spent + [outcome])
        } catch {
            unchecked.increment()
            return nil
        }
    }

    /// The outcome whose bucket has the least left, for the headers.
    private static func tightest(_ outcomes: [RateLimiter.Outcome]) -> RateLimiter.Outcome? {
        outcomes.min { Double($0.remaining) / Double(max(1, $0.limit)) < Double($1.remaining) / Double(max(1, $1.limit)) }
    }

    /// The JSON-RPC error of a refused take.
    static func refusal(_ outcome: RateLimiter.Outcome) -> RPCError {
        .rateLimited(
            retryAfterMs: outcome.retryAfterMs,
            "too many calls from this client (at most \(outcome.limit) a minute); retry in \(outcome.retryAfterMs) ms")
    }
}
