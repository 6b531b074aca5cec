import Postgres
import RPC
import Redis

// Storage failures as callers see them: a dependency that is down is `unavailable` (safe to retry);
// a unique value taken is a `conflict`; anything else is an internal error, logged, never shown.

extension PostgresError: RPCErrorConvertible {
    public var rpcError: RPCError {
        if isUniqueViolation { return .conflict("that value is already taken") }
        switch code {
        case .connectionFailed, .poolClosed, .timeout: return .unavailable("the database is unavailable; retry shortly")
        default: return .internalError()
        }
    }
}

extension RedisError: RPCErrorConvertible {
    public var rpcError: RPCError {
        switch code {
        case .connectionFailed, .timeout, .closed: .unavailable("the cache is unavailable; retry shortly")
        default: .internalError()
        }
    }
}
