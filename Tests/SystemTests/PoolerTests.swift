import TestSupport
import Testing

/// The seven services through PgBouncer in transaction mode (`AVIARY_POSTGRES_PREPARED=off`), on
/// fewer server connections than the services open.
@Suite struct PoolerTests {
    @Test func theServicesWorkThroughPgBouncerInTransactionMode() async throws {
        let bouncer = try await TestPgBouncer.launch(in: try await TestServers.postgres(), serverConnections: 6)
        let stack = try await ServiceStack.start(
            ServiceStack.allServices, redisDatabase: 6, environment: ["AVIARY_POSTGRES_PREPARED": "off"],
            servicePostgresURL: bouncer.url(for:))
        try await UserDay.run(on: stack)
    }
}
