import Postgres
import RPC
import Redis

// Storage failures as callers see them: a dependency that is down is `unavailable` (safe to retry);
// a unique value taken is a `conflict`; anything else is an internal error, logged, never shown.

extension PostgresError: RPCErrorConvertible {
    public var rpcError: RPCError {
        if isUniqueViolation { return .conflict("that value is already taken") }
        // Retried inside `transaction`; what still fails there, or came from a single statement, is
        // contention to wait out.
        if isRetryableTransactionFailure { return .unavailable("the database is busy; retry shortly") }
        return isUnreachable ? .unavailable("the database is unavailable; retry shortly") : .internalError()
    }
}

extension RedisError: RPCErrorConvertible {
    public var rpcError: RPCError {
        isTransient ? .unavailable("the cache is unavailable; retry shortly") : .internalError()
    }
}
