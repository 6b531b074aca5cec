import ChannelSupport
import Foundation
import Postgres
import RPC
import Redis

/// The `system.health` result (contract §3).
public struct HealthReport: Codable, Sendable {
    public var status: String
    public var service: String
    public var version: String
    /// The git revision the binary was built from.
    public var revision: String
    public var uptimeMs: Int64
    public var dependencies: [String: String]
}

extension RPCRouter {
    /// Registers `system.health`, which every service answers.
    mutating func registerHealth(resources: ServiceResources, started: ContinuousClock.Instant) {
        let service = self.service
        register(
            "system.health", summary: "Liveness of the service and reachability of its dependencies.",
            access: .anonymous
        ) { (_: Empty, _) in
            async let postgres = resources.postgres.isReachable()
            async let redis = resources.redis.isReachable()
            let dependencies = ["postgres": await postgres ? "ok" : "down", "redis": await redis ? "ok" : "down"]
            let elapsed = ContinuousClock.now - started
            return HealthReport(
                status: dependencies.values.allSatisfy { $0 == "ok" } ? "ok" : "degraded",
                service: service, version: AviaryVersion.version, revision: AviaryVersion.revision,
                uptimeMs: elapsed.milliseconds,
                dependencies: dependencies)
        }
    }
}
