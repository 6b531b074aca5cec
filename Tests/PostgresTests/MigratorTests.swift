import Foundation
import Postgres
import TestSupport
import Testing

@Suite("Migrations")
struct MigratorTests {
    static let migrations = [
        PostgresMigration(
            version: 1, name: "create items",
            sql: """
                CREATE TABLE shop.items (id bigint PRIMARY KEY, name text NOT NULL);
                CREATE TABLE shop.applied (n int);
                INSERT INTO shop.applied VALUES (1);
                """),
        PostgresMigration(
            version: 2, name: "add price",
            sql: """
                ALTER TABLE shop.items ADD COLUMN price bigint NOT NULL DEFAULT 0;
                INSERT INTO shop.applied VALUES (2);
                """),
    ]

    @Test func twoConcurrentMigratorsApplyEachMigrationOnce() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        let migrator = PostgresMigrator(schema: "shop", migrations: Self.migrations)
        async let first = withTestClient(url: url, poolSize: 1) { try await migrator.migrate($0) }
        async let second = withTestClient(url: url, poolSize: 1) { try await migrator.migrate($0) }
        let results = try await [first, second]
        #expect(results.contains([1, 2]))
        #expect(results.contains([]))
        try await withTestClient(url: url, poolSize: 1) { client in
            let applied = try await client.query("SELECT n FROM shop.applied ORDER BY n")
            #expect(try applied.map { try $0.decode(Int.self, at: 0) } == [1, 2])
            let recorded = try await client.query(
                "SELECT version, name, applied_at FROM shop.schema_migrations ORDER BY version")
            #expect(try recorded.map { try $0.decode(Int.self, at: 0) } == [1, 2])
            #expect(try recorded[1].decode(String.self, column: "name") == "add price")
            _ = try recorded[0].decode(Date.self, column: "applied_at")
        }
    }

    @Test func appliesOnlyPendingMigrationsAndRefusesUnknownVersions() async throws {
        try await withTestClient(poolSize: 1) { client in
            let firstOnly = PostgresMigrator(schema: "shop", migrations: [Self.migrations[0]])
            #expect(try await firstOnly.migrate(client) == [1])
            let both = PostgresMigrator(schema: "shop", migrations: Self.migrations.reversed())
            #expect(try await both.migrate(client) == [2])
            #expect(try await both.migrate(client) == [])

            let error = try #require(await postgresError { try await firstOnly.migrate(client) })
            #expect(error.code == .migrationFailed)
            #expect(error.description.contains("2"))
        }
    }

    @Test func aFailingMigrationLeavesNoTrace() async throws {
        try await withTestClient(poolSize: 1) { client in
            let broken = PostgresMigrator(
                schema: "shop",
                migrations: [
                    Self.migrations[0],
                    PostgresMigration(
                        version: 2, name: "broken", sql: "CREATE TABLE shop.other (x int); SELEC 1;"
                    ),
                ])
            let error = try #require(await postgresError { try await broken.migrate(client) })
            #expect(error.sqlState == "42601")
            // Nothing of it stayed, not even the first migration or the schema.
            let schemas = try await client.query(
                "SELECT count(*) FROM pg_namespace WHERE nspname = 'shop'")
            #expect(try schemas.first?.decode(Int.self, at: 0) == 0)
        }
    }

    @Test func rejectsDuplicateVersions() async throws {
        try await withTestClient(poolSize: 1) { client in
            let duplicate = PostgresMigrator(
                schema: "shop", migrations: [Self.migrations[0], Self.migrations[0]])
            #expect(
                await postgresError { try await duplicate.migrate(client) }?.code
                    == .migrationFailed)
        }
    }
}
