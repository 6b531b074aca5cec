import Foundation

extension ServiceStack {
    /// The topology the end-to-end suites run on, from `AVIARY_TEST_TOPOLOGY`: unset, the suite's
    /// shared Postgres and Redis; `cluster`, the one `deploy/local/cluster.sh` starts, private to the
    /// stack: a six-node Redis Cluster (three masters, three replicas), a Postgres primary with a
    /// streaming replica the services read from, PgBouncer in transaction mode in front of the
    /// primary (prepared statements off), and two instances of every service.
    public static var testTopology: String? {
        ProcessInfo.processInfo.environment["AVIARY_TEST_TOPOLOGY"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Starts `services` on ``testTopology``; `redisDatabase` is used on a single Redis only (a
    /// cluster has one database).
    public static func startOnTestTopology(
        _ services: [String], redisDatabase: Int, environment: [String: String] = [:]
    ) async throws -> ServiceStack {
        switch testTopology {
        case nil:
            return try await start(services, redisDatabase: redisDatabase, environment: environment)
        case "cluster":
            let primary = try await TestServers.startPrivatePostgres()
            let replica = try await primary.makeReplica()
            let bouncer = try await TestPgBouncer.launch(in: primary)
            let cluster = try await TestRedisGroup.launchCluster()
            return try await start(
                services, redisDatabase: 0, environment: environment.merging(["AVIARY_POSTGRES_PREPARED": "off"]) { given, _ in given },
                instances: Dictionary(uniqueKeysWithValues: services.map { ($0, 2) }), postgresServer: primary,
                servicePostgresURL: bouncer.url(for:), redisURL: cluster.url, replica: replica, retaining: [bouncer, cluster])
        case let other?:
            throw TestSupportError("AVIARY_TEST_TOPOLOGY=\(other): the topologies are cluster, or none (unset)")
        }
    }
}
