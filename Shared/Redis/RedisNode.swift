import ChannelSupport
import Logging

/// One Redis server's connections (a cluster has one of these per node), with the breaker that
/// spares callers a server that does not answer.
final class RedisNode: Sendable {
    let configuration: RedisConfiguration
    let pool: RedisConnectionPool
    let breaker: CircuitBreaker
    let logger: Logger

    init(configuration: RedisConfiguration, logger: Logger) {
        var logger = logger
        logger[metadataKey: "redis.server"] = "\(configuration.server)"
        self.configuration = configuration
        self.logger = logger
        self.pool = RedisConnectionPool(configuration: configuration, logger: logger)
        self.breaker = CircuitBreaker(pause: configuration.breakerPause)
    }

    /// Runs `commands` as one pipeline, on a shared connection or, when one of them may block, on a
    /// connection of their own; retries once on a fresh connection when the connection broke and
    /// retrying is safe (see ``RedisClient``). Refused at once while the breaker is open.
    func execute(_ commands: [[RedisArgument]]) async throws -> [RESPValue] {
        let probe = try breaker.admit { left in
            RedisError(.connectionFailed, detail: "Redis did not answer lately; not tried again for \(left) (or until a probe is answered)")
        }
        var unanswered = false
        do {
            let replies = try await executeOnPool(commands, unanswered: &unanswered)
            breaker.record(unanswered: false, probe: probe)
            return replies
        } catch {
            breaker.record(unanswered: unanswered, probe: probe)
            throw error
        }
    }

    /// ``execute(_:)`` past the breaker; sets `unanswered` when Redis could not be reached or did not
    /// answer in time (not when an established connection broke: the next one may well work).
    private func executeOnPool(_ commands: [[RedisArgument]], unanswered: inout Bool) async throws -> [RESPValue] {
        let blocking = commands.contains(where: RedisCommandSafety.mayBlock)
        var isRetry = false
        while true {
            let connection: RedisChannelConnection
            do {
                connection = try await blocking ? pool.leaseDedicated() : pool.shared()
            } catch let error as RedisError where error.code == .connectionFailed || error.code == .timeout {
                unanswered = true
                throw error
            }
            do {
                let replies = try await connection.send(commands)
                if blocking { pool.release(connection) }
                return replies
            } catch let failure as RedisConnectionFailure {
                if blocking { pool.release(connection) }
                let safe = !failure.requestMayHaveArrived || commands.allSatisfy(RedisCommandSafety.isReadOnly)
                if !isRetry, failure.error.code == .connectionFailed, safe {
                    logger.notice(
                        "Redis connection broke; retrying on a new connection",
                        metadata: ["error": "\(String(reflecting: failure.error))"])
                    isRetry = true
                    continue
                }
                unanswered = failure.error.code == .timeout
                throw failure.error
            }
        }
    }
}
