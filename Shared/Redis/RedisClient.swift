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
/// On a Redis Cluster (``RedisDeployment/cluster(seeds:)``) each command goes to the master of its
/// keys' slot, a pipeline is split per node with its replies kept in order, and the client follows
/// the cluster's redirections and changes (``RedisCluster``). With Sentinel, each new connection
/// asks the sentinels where the master is (``RedisConnectionPool``).
///
/// Call `shutdown()` when done: it lets commands in flight finish and closes the connections.
public final class RedisClient: Sendable {
    /// Where the commands go: one server's connections, or a cluster's nodes.
    enum Route: Sendable {
        case node(RedisNode)
        case cluster(RedisCluster)
    }

    /// The configuration the client was created with.
    public let configuration: RedisConfiguration
    let route: Route
    let logger: Logger

    /// Creates the client; no connection is opened until the first command.
    ///
    /// - Parameter logger: used for connection events (debug) and retries (notice); metadata
    ///   `redis.server` is added.
    public init(configuration: RedisConfiguration, logger: Logger) {
        precondition(configuration.poolSize > 0, "RedisConfiguration.poolSize must be at least 1")
        self.configuration = configuration
        self.logger = logger
        if case .cluster = configuration.deployment {
            route = .cluster(RedisCluster(configuration: configuration, logger: logger))
        } else {
            route = .node(RedisNode(configuration: configuration, logger: logger))
        }
    }

    deinit {
        // Without `shutdown()`, still close the connections.
        switch route {
        case .node(let node): node.pool.beginClosing()
        case .cluster(let cluster): cluster.beginClosing()
        }
    }

    /// Whether commands go to a Redis Cluster, where the keys of one script or multi-key command
    /// must share a slot.
    public var isCluster: Bool {
        configuration.hasShardedChannels
    }

    /// `keys` in batches of at most `size` that one script call may take together: in order and
    /// `size` at a time on one server; on a cluster, grouped by slot as well.
    public func batches(of keys: [String], upTo size: Int) -> [[String]] {
        precondition(size > 0, "a batch holds at least one key")
        func split(_ keys: [String]) -> [[String]] {
            stride(from: 0, to: keys.count, by: size).map { Array(keys[$0..<min($0 + size, keys.count)]) }
        }
        guard isCluster else { return split(keys) }
        var bySlot: [Int: [String]] = [:]
        var order: [Int] = []
        for key in keys {
            let slot = RedisSlot.of(key)
            if bySlot[slot] == nil { order.append(slot) }
            bySlot[slot, default: []].append(key)
        }
        return order.flatMap { split(bySlot[$0, default: []]) }
    }

    /// Runs `commands` as one pipeline (on a cluster, one per node) and returns their replies in order.
    func execute(_ commands: [[RedisArgument]]) async throws -> [RESPValue] {
        switch route {
        case .node(let node): try await node.execute(commands)
        case .cluster(let cluster): try await cluster.execute(commands)
        }
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
    /// trip. The calls a server answered `NOSCRIPT` (it lost its script cache: a restart,
    /// `SCRIPT FLUSH`, a cluster node that never ran it) are sent again with `EVAL`, which also
    /// caches the script there. Replies are returned in place.
    public func evaluateEach(_ script: RedisScript, _ calls: [(keys: [String], arguments: [RedisArgument])]) async throws -> [RESPValue] {
        let tails = calls.map { call -> [RedisArgument] in
            [RedisArgument(call.keys.count)] + call.keys.map { RedisArgument($0) } + call.arguments
        }
        var replies = try await pipeline(tails.map { ["EVALSHA", RedisArgument(script.sha1)] + $0 })
        let missing = replies.indices.filter { replies[$0].errorMessage?.hasPrefix("NOSCRIPT") == true }
        guard !missing.isEmpty else { return replies }
        let again = try await pipeline(missing.map { ["EVAL", RedisArgument(script.source)] + tails[$0] })
        for (index, reply) in zip(missing, again) { replies[index] = reply }
        return replies
    }

    /// Whether Redis answers `PING` right now.
    public func isReachable() async -> Bool {
        (try? await send(["PING"])) == .simpleString("PONG")
    }

    /// Fails later commands with `.closed`, lets commands in flight finish and closes every
    /// connection. Safe to call more than once.
    public func shutdown() async {
        switch route {
        case .node(let node): await node.pool.close()
        case .cluster(let cluster): await cluster.close()
        }
    }
}
