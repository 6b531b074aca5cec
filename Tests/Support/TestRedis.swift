import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A Redis server of the tests' own, in a temporary folder, on a random port of 127.0.0.1 and (when
/// the folder's path is short enough for a socket address) on a Unix socket in that folder, with no
/// persistence.
public final class TestRedis: Sendable {
    /// Always "127.0.0.1".
    public let host = "127.0.0.1"
    /// Random, chosen at the first start and kept across `stop()`/`start()`.
    public let port: Int
    /// The Unix socket the server also listens on, if any.
    public let socketPath: String?
    private let lifecycle: ServerLifecycle

    private init(port: Int, socketPath: String?, lifecycle: ServerLifecycle) {
        self.port = port
        self.socketPath = socketPath
        self.lifecycle = lifecycle
    }

    /// "redis://127.0.0.1:PORT".
    public var url: String { "redis://\(host):\(port)" }

    /// "unix:///…/redis.sock": the same server through its Unix socket, if it has one.
    public var socketURL: String? { socketPath.map { "unix://\($0)" } }

    static func launch() async throws -> TestRedis {
        guard let redisServer = findExecutable("redis-server") else {
            throw TestSupportError("redis-server not found in $PATH (apt-get install redis-server)")
        }
        let folder = try TemporaryFolder.create("redis")
        let cleanupToken = ExitCleanup.register(folder)
        do {
            let port = try freePort()
            // A Unix socket path over 107 bytes is refused, so a deep $TMPDIR means TCP only.
            let socketPath = folder.path.utf8.count < 90 ? folder.file("redis.sock") : nil
            let command =
                [
                    redisServer, "--port", String(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--dir", folder.path,
                ] + (socketPath.map { ["--unixsocket", $0, "--unixsocketperm", "700"] } ?? [])
            let lifecycle = ServerLifecycle(
                name: "redis", command: command, folder: folder, cleanupToken: cleanupToken,
                stopSignal: SIGTERM, isReady: { Self.answersPing(port: port) })
            let redis = TestRedis(port: port, socketPath: socketPath, lifecycle: lifecycle)
            try await lifecycle.start()
            return redis
        } catch {
            ExitCleanup.release(cleanupToken)
            throw error
        }
    }

    /// Runs `redis-cli` against this server with `arguments` (say `["PING"]`) and returns its output.
    @discardableResult
    public func cli(_ arguments: [String]) async throws -> String {
        guard let redisCLI = findExecutable("redis-cli") else {
            throw TestSupportError("redis-cli not found in $PATH (apt-get install redis-tools)")
        }
        return try await Command(
            arguments: [redisCLI, "-h", host, "-p", String(port)] + arguments
        ).output()
    }

    /// The server's log, for failure messages.
    public func logText() async -> String {
        (try? String(contentsOfFile: await lifecycle.log, encoding: .utf8)) ?? ""
    }

    /// Stops the server (SIGTERM, nothing saved); the port is kept.
    public func stop() async throws {
        try await lifecycle.stop()
    }

    /// Stalls the server (SIGSTOP): connections stay open and nothing is answered, until ``resume()``.
    public func pause() async {
        await lifecycle.signal(SIGSTOP)
    }

    /// Lets a paused server go on (SIGCONT).
    public func resume() async {
        await lifecycle.signal(SIGCONT)
    }

    /// Starts the server again on the same port, empty; waits until it answers PING.
    public func start() async throws {
        try await lifecycle.start()
    }

    static func answersPing(port: Int) -> Bool {
        let reply = try? TCPExchange.run(
            host: "127.0.0.1", port: port, request: Array("PING\r\n".utf8), timeout: .seconds(1)
        ) { $0.contains(UInt8(ascii: "\n")) }
        return reply.map { $0.starts(with: Array("+PONG".utf8)) } ?? false
    }
}
