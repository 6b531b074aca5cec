import Logging
import NIOPosix

/// A pooled Redis client: commands, pipelines and Lua scripts, safe to share between tasks.
///
/// hiredis is blocking, so every call runs on the client's own `NIOThreadPool` (one thread per pooled
/// connection, so a command never waits for a thread, and a slow Redis cannot starve other blocking
/// work such as Postgres queries), never on an event loop. Connections open lazily, up to
/// `configuration.poolSize`; callers beyond that wait in FIFO order.
///
/// A connection that breaks is replaced. A command that failed because its connection broke is retried
/// once on a fresh connection when that is safe — read-only commands, and any command that provably
/// never reached the server; otherwise it throws `.connectionFailed`.
///
/// Call `shutdown()` when done: it waits for commands in flight and stops the client's threads.
public final class RedisClient: Sendable {
    /// The configuration the client was created with.
    public let configuration: RedisConfiguration
    let threadPool: NIOThreadPool
    let pool: RedisConnectionPool
    let logger: Logger

    /// Creates the client and starts its threads; no connection is opened until the first command.
    ///
    /// - Parameter logger: used for connection events (debug) and retries (notice); metadata
    ///   `redis.server` is added.
    public init(configuration: RedisConfiguration, logger: Logger) {
        precondition(configuration.poolSize > 0, "RedisConfiguration.poolSize must be at least 1")
        var logger = logger
        logger[metadataKey: "redis.server"] = "\(configuration.host):\(configuration.port)"
        self.configuration = configuration
        self.logger = logger
        self.threadPool = NIOThreadPool(numberOfThreads: configuration.poolSize)
        self.threadPool.start()
        self.pool = RedisConnectionPool(configuration: configuration, threadPool: threadPool, logger: logger)
    }

    deinit {
        // Without `shutdown()`, still let the threads end (they would otherwise run forever).
        pool.close()
        threadPool.shutdownGracefully { _ in }
    }

    /// Sends one command and returns its reply.
    ///
    /// - Throws: `RedisError` — `.serverError` for an error reply (the reply text is in `serverMessage`),
    ///   `.connectionFailed`, `.timeout`, `.protocolError` or `.closed`; or `CancellationError`.
    public func send(_ command: [RedisArgument]) async throws -> RESPValue {
        let reply = try await execute([command])[0]
        if case .error(let message) = reply {
            throw RedisError(.serverError, serverMessage: message)
        }
        return reply
    }

    /// Sends all commands at once, then reads all replies: one round trip on one connection.
    ///
    /// Error replies do not throw: they are returned in place as `.error`, one reply per command, in order.
    ///
    /// - Throws: `RedisError` when the connection fails (`.connectionFailed`, `.timeout`, …).
    public func pipeline(_ commands: [[RedisArgument]]) async throws -> [RESPValue] {
        guard !commands.isEmpty else { return [] }
        return try await execute(commands)
    }

    /// Runs `script` with `EVALSHA`, falling back to `EVAL` (which also caches it) when the server
    /// answers `NOSCRIPT`.
    ///
    /// - Throws: like `send`; an error raised by the script is a `.serverError`.
    public func evaluate(
        _ script: RedisScript, keys: [String] = [], arguments: [RedisArgument] = []
    ) async throws -> RESPValue {
        let tail = [RedisArgument(keys.count)] + keys.map { RedisArgument($0) } + arguments
        do {
            return try await send(["EVALSHA", RedisArgument(script.sha1)] + tail)
        } catch let error as RedisError where error.serverMessage?.hasPrefix("NOSCRIPT") == true {
            logger.debug(
                "Redis does not have the script cached; sending it with EVAL",
                metadata: [
                    "redis.script.sha1": "\(script.sha1)"
                ])
            return try await send(["EVAL", RedisArgument(script.source)] + tail)
        }
    }

    /// Whether Redis answers `PING` right now.
    public func isReachable() async -> Bool {
        (try? await send(["PING"])) == .simpleString("PONG")
    }

    /// Fails waiting and later commands with `.closed`, waits for commands in flight, closes every
    /// connection and stops the client's threads. Safe to call more than once.
    public func shutdown() async {
        pool.close()
        do {
            try await threadPool.shutdownGracefully()
        } catch {
            logger.warning("Stopping the Redis client's threads failed", metadata: ["error": "\(error)"])
        }
    }
}
