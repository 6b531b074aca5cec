import Foundation
import TestSupport
import Testing

/// Each service on a database of its own, spread over two Postgres servers, as a deployment that
/// outgrows one server runs them: their schemas were always their own, and the secrets they share
/// come from configuration (`AVIARY_SERVICE_SECRET`, `AVIARY_TOKEN_SIGNING_KEY`, as the stack sets).
@Suite struct SeparateDatabasesTests {
    @Test func eachServiceOnItsOwnDatabaseAndServer() async throws {
        let servers = [try await TestServers.postgres(), try await TestServers.startPrivatePostgres()]
        var databases: [String: (server: TestPostgres, url: String)] = [:]
        for (index, service) in ServiceStack.allServices.enumerated() {
            let server = servers[index % servers.count]
            databases[service] = (server, try await server.makeDatabase())
        }
        let stack = try await ServiceStack.start(
            ServiceStack.allServices, redisDatabase: 8,
            serviceEnvironment: databases.mapValues { ["AVIARY_POSTGRES_URL": $0.url] })
        try await UserDay.run(on: stack)

        // Each database holds its service's schema and aviary_shared (its instances' node leases)
        // and no other service's.
        let schemas = ["auth", "social_graph", "tweets", "timeline", "messaging", "notifications", "media"]
        for (service, database) in databases {
            let found = try await database.server.psql(
                "SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace WHERE nspname = ANY('{\(schemas.joined(separator: ","))}')",
                url: database.url)
            let own = service.replacingOccurrences(of: "-", with: "_")
            #expect(found == own, "\(service): \(found)")
        }
    }
}
