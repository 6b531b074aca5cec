import Logging

extension RedisClient {
    /// Runs `commands` as one pipeline, on a shared connection or, when one of them may block, on a
    /// connection of their own; retries once on a fresh connection when the connection broke and
    /// retrying is safe (see the type's documentation).
    func execute(_ commands: [[RedisArgument]]) async throws -> [RESPValue] {
        let blocking = commands.contains(where: RedisCommandSafety.mayBlock)
        var isRetry = false
        while true {
            let connection = try await blocking ? pool.leaseDedicated() : pool.shared()
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
                throw failure.error
            }
        }
    }
}
