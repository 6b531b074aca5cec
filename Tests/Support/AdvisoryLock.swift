import Postgres

/// Runs `body` while a session of `database` holds the advisory lock `key`, so that whoever takes
/// turns through it (an outbox relay: ``OutboxRelay/lockKey(schema:)``) waits until it is done.
public func holdingAdvisoryLock<T: Sendable>(_ key: Int64, on database: PostgresClient, _ body: () async throws -> T)
    async throws -> T
{
    try await database.withConnection { connection in
        try await connection.execute("SELECT pg_advisory_lock($1)", [key])
        do {
            let result = try await body()
            try await connection.execute("SELECT pg_advisory_unlock($1)", [key])
            return result
        } catch {
            _ = try? await connection.execute("SELECT pg_advisory_unlock($1)", [key])
            throw error
        }
    }
}
