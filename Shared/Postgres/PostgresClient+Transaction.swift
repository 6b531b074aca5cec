import Logging

extension PostgresClient {
    /// Runs `body` in a transaction on one pooled connection: `BEGIN`, then
    /// `COMMIT` if `body` returns, `ROLLBACK` if it throws (the error is rethrown).
    ///
    /// On a serialization failure (40001) or deadlock (40P01) the whole transaction runs again, up
    /// to `transactionRetryLimit` times after a short random pause, so `body` must have no effects
    /// outside the database. A transaction whose statement failed cannot commit: if `body` swallows
    /// such an error the transaction throws `.queryFailed` with SQLSTATE 25P02.
    public func transaction<T: Sendable>(
        isolation: PostgresIsolation = .readCommitted,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        var retries = 0
        while true {
            do {
                return try await withConnection { connection in
                    try await connection.inTransaction(isolation: isolation, body)
                }
            } catch let error as PostgresError
                where error.isRetryableTransactionFailure && retries < transactionRetryLimit
            {
                retries += 1
                logger.debug(
                    "retrying a Postgres transaction",
                    metadata: [
                        "db.sqlstate": "\(error.sqlState ?? "")",
                        "db.transaction.retry": "\(retries)",
                    ])
                // Random pauses keep two conflicting transactions from meeting again in lockstep.
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...(5 << retries))))
            }
        }
    }
}

extension PostgresConnection {
    func inTransaction<T>(
        isolation: PostgresIsolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        // The BEGIN leaves with the body's first statement (an empty body sends nothing at all).
        deferBegin(isolation.beginStatement)
        do {
            let value = try await body(self)
            if cancelDeferredBegin() { return value }
            guard isInTransaction, !isInFailedTransaction else {
                throw PostgresError(
                    code: .queryFailed,
                    reason: isInTransaction
                        ? "a statement failed inside the transaction, which cannot commit"
                        : "the transaction was ended inside its body",
                    sqlState: isInTransaction ? "25P02" : nil)
            }
            try await executeScript("COMMIT")
            return value
        } catch {
            if cancelDeferredBegin() { throw error }
            if isInTransaction {
                // A failed ROLLBACK means a broken connection, which the pool discards anyway.
                try? await executeScript("ROLLBACK")
            }
            throw error
        }
    }
}
