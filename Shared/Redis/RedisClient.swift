import ChannelSupport
import Logging

/// A pooled Redis client: commands, pipelines and Lua scripts, safe to share between tasks.
///
/// Commands go out on NIO event loops and hiredis's protocol reader parses the replies, so no
/// thread blocks on Redis. Concurrent callers share up to `configuration.poolSize` connections,
/// each carrying many pipelines at once (Redis answers in order, so replies pair with requests);
/// commands that may block on the server (`BLPOP`, `XREADGROUP … BLOCK`) get a connection of their
/// own for the duration. Connections open on first use.
///
/// A connection that breaks is replaced. A command that failed because its connection broke is retried
/// once on a fresh connection when that is safe — read-only commands, and any command that provably
/// never reached the server; otherwise it throws `.connectionFailed`. A command that times out or
/// cannot connect opens a breaker (``ChannelSupport/CircuitBreaker``): for `configuration.breakerPause` every command
/// fails at once with `.connectionFailed`, then one probes.
///
/// Call `shutdown()` when done: it lets commands in flight finish and closes the connections.
public final class RedisClient: Sendable {
    /// The configuration the client was created with.
    public let configuration: RedisConfiguration
    let pool: RedisConnectionPool
    let breaker: CircuitBreaker
    let logger: Logger

    /// Creates the client; no connection is opened until the first command.
    ///
    /// - Parameter logger: used for connection events (debug) and retries (notice); metadata
    ///   `redis.server` is added.
    public init(configuration: RedisConfiguration, logger: Logger) {
        precondition(configuration.poolSize > 0, "RedisConfiguration.poolSize must be at least 1")
        var logger = logger
        logger[metadataKey: "redis.server"] = "\(configuration.server)"
        self.configuration = configuration
        self.logger = logger
        self.pool = RedisConnectionPool(configuration: configuration, logger: logger)
        self.breaker = CircuitBreaker(pause: configuration.breakerPause)
    }

    deinit {
        // Without `shutdown()`, still close the connections.
        pool.beginClosing()
    }

    /// Sends one command and returns its reply.
    ///
    /// - Throws: `RedisError` — `.serverError` for an error reply (the reply text is in `serverMessage`),
    ///   `.connectionFailed`, `.timeout`, `.protocolError` or `.closed`; or `CancellationError`.
    public func send(_ command: [RedisArgument]) async throws -> RESPValue {
        let reply = try await execute([command])[0]
        try RedisError.throwFirstRefusal(in: [reply])
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

    /// Runs `script` once per call (its keys and arguments), the `EVALSHA`s pipelined: one round
    /// trip. When the server lost its script cache (restart, `SCRIPT FLUSH`) it loads the script and
    /// sends them all again, so a script must be safe to run twice. Replies are returned in place.
    public func evaluateEach(_ script: RedisScript, _ calls: [(keys: [String], arguments: [RedisArgument])]) async throws -> [RESPValue] {
        let commands = calls.map { call -> [RedisArgument] in
            ["EVALSHA", RedisArgument(script.sha1), RedisArgument(call.keys.count)] + call.keys.map { RedisArgument($0) }
                + call.arguments
        }
        let replies = try await pipeline(commands)
        guard replies.contains(where: { $0.errorMessage?.hasPrefix("NOSCRIPT") == true }) else { return replies }
        _ = try await send(["SCRIPT", "LOAD", RedisArgument(script.source)])
        return try await pipeline(commands)
    }

    /// Whether Redis answers `PING` right now.
    public func isReachable() async -> Bool {
        (try? await send(["PING"])) == .simpleString("PONG")
    }

    /// Fails later commands with `.closed`, lets commands in flight finish and closes every
    /// connection. Safe to call more than once.
    public func shutdown() async {
        await pool.close()
    }
}
