import Postgres

/// Runs `statement` in a transaction of `database` and keeps the transaction open, with the row
/// locks it took, while `body` runs; then commits it, or with `commit: false` rolls it back. A
/// service's statement that meets those rows waits until then: a test can line up races.
public func holdingTransaction<T: Sendable>(
    _ statement: String, _ parameters: [any PostgresEncodable] = [], on database: PostgresClient, commit: Bool = true,
    _ body: () async throws -> T
) async throws -> T {
    do {
        return try await database.transaction { connection in
            try await connection.execute(statement, parameters)
            let value = try await body()
            if commit { return value }
            throw RolledBack(value: value)
        }
    } catch let rollback as RolledBack<T> {
        return rollback.value
    }
}

/// Thrown out of a held transaction to roll it back, with what its body returned.
private struct RolledBack<T: Sendable>: Error {
    let value: T
}
