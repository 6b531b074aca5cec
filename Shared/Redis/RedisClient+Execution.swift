import Logging
import NIOPosix

extension RedisClient {
    /// Runs `commands` on a leased connection, retrying once on a fresh connection when the connection
    /// broke and retrying is safe (see the type's documentation).
    func execute(_ commands: [[RedisArgument]]) async throws -> [RESPValue] {
        let readOnly = commands.allSatisfy(RedisCommandSafety.isReadOnly)
        var isRetry = false
        while true {
            let connection = try await pool.lease()
            let replies: [RESPValue]
            do {
                replies = try await threadPool.runIfActive {
                    try connection.execute(commands)
                }
            } catch let failure as RedisConnection.Failure {
                pool.release(connection)
                let safe = readOnly || !failure.requestMayHaveArrived
                if !isRetry, failure.error.code == .connectionFailed, safe {
                    logger.notice(
                        "Redis connection broke; retrying on a new connection",
                        metadata: [
                            "error": "\(String(reflecting: failure.error))"
                        ])
                    isRetry = true
                    continue
                }
                throw failure.error
            } catch {
                // The work item never ran (pool shut down, or task cancelled): the connection is untouched.
                pool.release(connection)
                throw Self.normalize(error)
            }
            pool.release(connection)
            return replies
        }
    }

    /// Errors of a thread pool that is shutting down (inactive, or work dropped while the calling task
    /// was not cancelled) become `RedisError(.closed)`; anything else is returned unchanged.
    static func normalize(_ error: any Error) -> any Error {
        if error is NIOThreadPoolError.ThreadPoolInactive || (error is CancellationError && !Task.isCancelled)
        {
            return RedisError(.closed)
        }
        return error
    }
}
