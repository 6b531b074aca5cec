import Foundation
import Postgres
import Testing
import TestSupport

/// The client through PgBouncer in transaction mode (Debian's 1.18, which knows no named prepared
/// statements), with ``PostgresConfiguration/Options/transactionPooling``: more client connections
/// than server connections, so consecutive statements of one client connection land on different
/// server connections.
@Suite("Through a transaction pooler", .serialized)
struct TransactionPoolingTests {
    private static let bouncer = Task { try await TestPgBouncer.launch(in: try await TestServers.postgres(), serverConnections: 2) }

    private static func pooledOptions() -> PostgresConfiguration.Options {
        var options = PostgresConfiguration.Options()
        options.transactionPooling = true
        return options
    }

    @Test("pipelined statements, transactions, failures, decoding and migrations work on 2 server connections for 8 clients")
    func throughPgBouncer() async throws {
        let bouncer = try await Self.bouncer.value
        let url = bouncer.url(for: try await TestServers.postgres().makeDatabase())
        try await withTestClient(url: url, poolSize: 8, options: Self.pooledOptions()) { client in
            try await client.execute("CREATE TABLE items (id bigint PRIMARY KEY, payload bytea, at timestamptz DEFAULT now())")
            // Statements pipelined on the client's connections, each parsed anew on whichever server
            // connection the pooler lends.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for id in 0..<400 {
                    group.addTask {
                        try await client.execute("INSERT INTO items (id, payload) VALUES ($1, $2)", [Int64(id), Data([1, 2, UInt8(id % 256)])])
                        _ = try await client.query("SELECT count(*) FROM items WHERE id <= $1", [Int64(id)])
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await client.query("SELECT count(*) FROM items").first?.decode(Int.self, at: 0) == 400)

            // A transaction keeps one server connection from BEGIN to COMMIT: it reads its own writes.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for id in 1000..<1050 {
                    group.addTask {
                        try await client.transaction { connection in
                            try await connection.execute("INSERT INTO items (id) VALUES ($1), ($2)", [Int64(id), Int64(id + 100)])
                            let seen = try await connection.query("SELECT count(*) FROM items WHERE id IN ($1, $2)", [Int64(id), Int64(id + 100)])
                            #expect(try seen.first?.decode(Int.self, at: 0) == 2)
                        }
                    }
                }
                try await group.waitForAll()
            }
            struct Abort: Error {}
            await #expect(throws: Abort.self) {
                try await client.transaction { connection in
                    try await connection.execute("INSERT INTO items (id) VALUES (5000)")
                    throw Abort()
                }
            }
            let duplicate = await postgresError { try await client.execute("INSERT INTO items (id) VALUES (1)") }
            #expect(duplicate?.isUniqueViolation == true, "\(String(describing: duplicate))")
            #expect(try await client.query("SELECT count(*) FROM items").first?.decode(Int.self, at: 0) == 500)

            // The server's own settings decode as the client's session settings would.
            let row = try #require(try await client.query("SELECT payload, at FROM items WHERE id = 7").first)
            #expect(try row.decode(Data.self, at: 0) == Data([1, 2, 7]))
            #expect(abs(try row.decode(Date.self, at: 1).timeIntervalSinceNow) < 300)

            let migrator = PostgresMigrator(
                schema: "pooled", migrations: [PostgresMigration(version: 1, name: "start", sql: "CREATE TABLE pooled.t (x int)")])
            #expect(try await migrator.migrate(client) == [1])
            #expect(try await migrator.migrate(client) == [])
        }
    }

    @Test("without it the pooler refuses the session settings of the startup packet, and says so")
    func refusedWithout() async throws {
        let bouncer = try await Self.bouncer.value
        let url = bouncer.url(for: try await TestServers.postgres().makeDatabase())
        let error = await postgresError {
            try await withTestClient(url: url, poolSize: 1) { client in _ = try await client.execute("SELECT 1") }
        }
        #expect(
            error?.code == .connectionFailed && String(reflecting: error).contains("unsupported startup parameter"),
            "\(String(reflecting: error))")
    }

    @Test("a server whose own settings would not decode is refused at connect, naming them")
    func unsuitableServerSettings() async throws {
        let bouncer = try await Self.bouncer.value
        let postgres = try await TestServers.postgres()
        let direct = try await postgres.makeDatabase()
        let database = String(direct.split(separator: "/").last ?? "")
        try await postgres.psql("ALTER DATABASE \(database) SET bytea_output = 'escape'")
        let error = await postgresError {
            try await withTestClient(url: bouncer.url(database: database), poolSize: 1, options: Self.pooledOptions()) { client in
                _ = try await client.execute("SELECT 1")
            }
        }
        #expect(error?.code == .invalidConfiguration && String(describing: error).contains("bytea_output"), "\(String(reflecting: error))")
    }
}
