import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A PostgreSQL server of the tests' own, in a temporary folder, on a random port of 127.0.0.1, tuned
/// for speed over durability (no fsync). The superuser role is `aviary`, with trust authentication.
public final class TestPostgres: Sendable {
    /// Always "127.0.0.1".
    public let host = "127.0.0.1"
    /// Random, chosen at the first start and kept across `stop()`/`start()`.
    public let port: Int
    /// The superuser role; no password is needed (trust authentication).
    public let user = "aviary"
    private let installation: PostgresInstallation
    private let lifecycle: ServerLifecycle
    private let databaseCount = Atomic<Int>(0)

    private init(port: Int, installation: PostgresInstallation, lifecycle: ServerLifecycle) {
        self.port = port
        self.installation = installation
        self.lifecycle = lifecycle
    }

    /// Creates a cluster with initdb and starts it; with `primary`, a streaming replica of it
    /// instead (`pg_basebackup -R`), a hot standby until ``promote()``.
    static func launch(replicaOf primary: TestPostgres? = nil) async throws -> TestPostgres {
        let installation = try PostgresInstallation.find()
        let account = try ServerAccount.current.get()
        let folder = try TemporaryFolder.create("postgres")
        let cleanupToken = ExitCleanup.register(folder)
        do {
            try account?.own(folder.path)
            let data = folder.file("data")
            let make =
                if let primary {
                    [
                        installation.tool("pg_basebackup"), "-h", primary.host, "-p", String(primary.port), "-U", "aviary",
                        "-D", data, "-R", "-X", "stream", "-c", "fast",
                    ]
                } else {
                    [
                        installation.tool("initdb"), "-D", data, "-U", "aviary", "--auth=trust",
                        "--encoding=UTF8", "--locale=C", "--no-sync",
                    ]
                }
            _ = try await Command(arguments: account.command(make), directory: folder.path).output(timeout: .seconds(120))
            let port = try freePort()
            // A Unix socket path over 107 bytes is refused, so a deep $TMPDIR means TCP only.
            let socketFolder = folder.path.utf8.count < 90 ? folder.path : ""
            let settings = [
                "listen_addresses=127.0.0.1", "unix_socket_directories=\(socketFolder)",
                "fsync=off", "synchronous_commit=off", "full_page_writes=off",
                "max_connections=300",
            ]
            let command = account.command(
                [installation.tool("postgres"), "-D", data, "-p", String(port)]
                    + settings.flatMap { ["-c", $0] })
            let isReady = Command(arguments: [
                installation.tool("pg_isready"), "-q", "-h", "127.0.0.1", "-p", String(port), "-U",
                "aviary", "-d", "postgres", "-t", "2",
            ])
            let lifecycle = ServerLifecycle(
                name: "postgres", command: command, folder: folder, cleanupToken: cleanupToken,
                stopSignal: SIGINT, isReady: { (try? await isReady.run().status) == 0 })
            let postgres = TestPostgres(
                port: port, installation: installation, lifecycle: lifecycle)
            try await lifecycle.start()
            return postgres
        } catch {
            ExitCleanup.release(cleanupToken)
            throw error
        }
    }

    /// "postgres://aviary@127.0.0.1:PORT/DATABASE".
    public func url(database: String) -> String {
        "postgres://\(user)@\(host):\(port)/\(database)"
    }

    /// Creates a fresh, empty database and returns its URL: "postgres://USER@127.0.0.1:PORT/DBNAME".
    public func makeDatabase() async throws -> String {
        let name = "aviary_test_\(databaseCount.add(1, ordering: .relaxed).newValue)"
        // template0: nobody connects to it, so concurrent CREATE DATABASEs never find it busy.
        try await psql("CREATE DATABASE \(name) TEMPLATE template0", url: url(database: "postgres"))
        return url(database: name)
    }

    /// Runs SQL through `psql` (unaligned, tuples only: `SELECT 1` gives "1") on the database at `url`
    /// (default: the `postgres` database) and returns what it printed; an SQL error is thrown.
    @discardableResult
    public func psql(_ sql: String, url: String? = nil) async throws -> String {
        try await Command(arguments: [
            installation.tool("psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
            "-d", url ?? self.url(database: "postgres"), "-c", sql,
        ]).output()
    }

    /// The server's log (stdout and stderr), for failure messages.
    public func logText() async -> String {
        (try? String(contentsOfFile: await lifecycle.log, encoding: .utf8)) ?? ""
    }

    /// Fast shutdown (open sessions are ended); the port and the data folder are kept.
    public func stop() async throws {
        try await lifecycle.stop()
    }

    /// Stalls the server and every backend (SIGSTOP): sessions stay open, new ones wait in the listen
    /// queue, and nothing is answered until ``resume()``.
    public func pause() async {
        await lifecycle.signal(SIGSTOP)
    }

    /// Lets a paused server go on (SIGCONT).
    public func resume() async {
        await lifecycle.signal(SIGCONT)
    }

    /// Starts the server again on the same port, with the same data; waits until it accepts sessions.
    public func start() async throws {
        try await lifecycle.start()
    }

    /// A streaming replica of this server on a port of its own, a hot standby (read-only) until
    /// its ``promote()``.
    public func makeReplica() async throws -> TestPostgres {
        try await Self.launch(replicaOf: self)
    }

    /// Makes a replica the primary (`pg_ctl promote`), as a failover does; returns once it takes writes.
    public func promote() async throws {
        let account = try ServerAccount.current.get()
        _ = try await Command(
            arguments: account.command([installation.tool("pg_ctl"), "promote", "-w", "-D", lifecycle.folder.file("data")]),
            directory: lifecycle.folder.path
        ).output(timeout: .seconds(60))
    }
}
