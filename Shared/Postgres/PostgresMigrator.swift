import Logging

/// Brings one Postgres schema up to date with a service's migrations, safely when several processes
/// start at once.
///
/// `migrate` runs in one transaction that first takes a transaction-scoped advisory lock derived
/// from the schema name, so concurrent migrators queue and each migration is applied exactly once.
/// It creates the schema and `<schema>.schema_migrations (version, name, applied_at)` if needed,
/// then applies the pending migrations in version order, each recorded in that same transaction:
/// all of them or none. Forward-only: if the database records a version this binary does not know
/// (a newer release already migrated it), it refuses with `.migrationFailed`.
public struct PostgresMigrator: Sendable {
    /// The schema the service owns, e.g. `"auth"`.
    public let schema: String
    public let migrations: [PostgresMigration]

    public init(schema: String, migrations: [PostgresMigration]) {
        self.schema = schema
        self.migrations = migrations
    }

    /// Applies the pending migrations and returns their versions (empty when up to date).
    @discardableResult
    public func migrate(_ client: PostgresClient) async throws -> [Int] {
        try validate()
        let schema = self.schema
        let table = "\(quotedIdentifier(schema)).schema_migrations"
        let migrations = self.migrations.sorted { $0.version < $1.version }
        let lockKey = advisoryLockKey
        let logger = client.logger
        return try await client.transaction { connection in
            // Untimed, as the migrations are: another process may hold the lock through a long one.
            try await connection.executeScript("SELECT pg_advisory_xact_lock(\(lockKey))", timed: false)
            // After the lock, so that concurrent migrators do not race to create them.
            try await connection.executeScript(
                """
                CREATE SCHEMA IF NOT EXISTS \(quotedIdentifier(schema));
                CREATE TABLE IF NOT EXISTS \(table) (
                    version bigint PRIMARY KEY,
                    name text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            let known = Set(migrations.map(\.version))
            var applied = Set<Int>()
            for row in try await connection.query("SELECT version FROM \(table) ORDER BY version") {
                let version = try row.decode(Int.self, at: 0)
                guard known.contains(version) else {
                    throw PostgresError(
                        code: .migrationFailed,
                        reason:
                            "schema \(schema) has migration \(version), which this binary does not know;"
                            + " refusing to run against a newer database")
                }
                applied.insert(version)
            }
            var newlyApplied: [Int] = []
            for migration in migrations where !applied.contains(migration.version) {
                try await connection.executeScript(migration.sql, timed: false)
                try await connection.execute(
                    "INSERT INTO \(table) (version, name) VALUES ($1, $2)",
                    [migration.version, migration.name])
                logger.info(
                    "applied migration",
                    metadata: [
                        "db.schema": "\(schema)", "db.migration.version": "\(migration.version)",
                        "db.migration.name": "\(migration.name)",
                    ])
                newlyApplied.append(migration.version)
            }
            return newlyApplied
        }
    }

    private func validate() throws {
        guard !schema.isEmpty, !schema.utf8.contains(0) else {
            throw PostgresError(
                code: .migrationFailed, reason: "the schema name is empty or has a NUL byte")
        }
        var seen = Set<Int>()
        for migration in migrations {
            guard migration.version > 0, seen.insert(migration.version).inserted else {
                throw PostgresError(
                    code: .migrationFailed,
                    reason: "migration version \(migration.version) is not positive or not unique")
            }
        }
    }

    private var advisoryLockKey: Int64 { AdvisoryLockKey.of("aviary.migrations.\(schema)") }
}

/// `name` as a quoted SQL identifier, so any schema name is safe to interpolate.
private func quotedIdentifier(_ name: String) -> String {
    "\"" + name.replacing("\"", with: "\"\"") + "\""
}
