import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// PgBouncer (Debian's, 1.18) in front of a test Postgres, in transaction mode: each transaction, or
/// each statement outside one, runs on whichever server connection is free, as in a deployment that
/// pools many service processes onto few server connections. Every database of the server is
/// reachable through it under its own name.
public final class TestPgBouncer: Sendable {
    /// Always "127.0.0.1".
    public let host = "127.0.0.1"
    /// Random.
    public let port: Int
    /// Server connections PgBouncer keeps per database and user: fewer than the clients open.
    public let serverConnections: Int
    private let lifecycle: ServerLifecycle

    private init(port: Int, serverConnections: Int, lifecycle: ServerLifecycle) {
        self.port = port
        self.serverConnections = serverConnections
        self.lifecycle = lifecycle
    }

    /// "postgres://aviary@127.0.0.1:PORT/DATABASE" through the pooler.
    public func url(database: String) -> String {
        "postgres://aviary@\(host):\(port)/\(database)"
    }

    /// The same database as `directURL` (a URL of `postgres`), through the pooler.
    public func url(for directURL: String) -> String {
        url(database: String(directURL.split(separator: "/").last ?? ""))
    }

    /// The pooler's log, for failure messages.
    public func logText() async -> String {
        (try? String(contentsOfFile: await lifecycle.log, encoding: .utf8)) ?? ""
    }

    /// Starts PgBouncer in front of `postgres` with `serverConnections` server connections per
    /// database.
    public static func launch(in front: TestPostgres, serverConnections: Int = 10) async throws -> TestPgBouncer {
        guard let pgbouncer = findExecutable("pgbouncer") ?? ["/usr/sbin/pgbouncer"].first(where: FileManager.default.isExecutableFile)
        else {
            throw TestSupportError("pgbouncer not found (apt-get install pgbouncer)")
        }
        let account = try ServerAccount.current.get()
        let folder = try TemporaryFolder.create("pgbouncer")
        let cleanupToken = ExitCleanup.register(folder)
        do {
            try account?.own(folder.path)
            let port = try freePort()
            let users = folder.file("users.txt")
            try #""aviary" """#.write(toFile: users, atomically: true, encoding: .utf8)
            let configuration = folder.file("pgbouncer.ini")
            try """
                [databases]
                * = host=\(front.host) port=\(front.port)

                [pgbouncer]
                listen_addr = 127.0.0.1
                listen_port = \(port)
                unix_socket_dir =
                auth_type = trust
                auth_file = \(users)
                pool_mode = transaction
                default_pool_size = \(serverConnections)
                max_client_conn = 2000
                server_reset_query =
                """.write(toFile: configuration, atomically: true, encoding: .utf8)
            for file in [users, configuration] { try account?.own(file) }
            let isReady = Command(arguments: [
                try PostgresInstallation.find().tool("pg_isready"), "-q", "-h", "127.0.0.1", "-p", String(port), "-U", "aviary",
                "-d", "postgres", "-t", "2",
            ])
            let lifecycle = ServerLifecycle(
                name: "pgbouncer", command: account.command([pgbouncer, configuration]), folder: folder,
                cleanupToken: cleanupToken, stopSignal: SIGINT, isReady: { (try? await isReady.run().status) == 0 })
            let bouncer = TestPgBouncer(port: port, serverConnections: serverConnections, lifecycle: lifecycle)
            try await lifecycle.start()
            return bouncer
        } catch {
            ExitCleanup.release(cleanupToken)
            throw error
        }
    }
}
