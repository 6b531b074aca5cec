import Logging
import RPC
import ServiceLifecycle

/// Runs an `RPCServer` on a free port for the length of a test body, then shuts it down gracefully.
public func withRPCServer<T: Sendable>(
    _ router: RPCRouter, host: String = "127.0.0.1", port: Int = 0, maxFrameBytes: Int = 1 << 20,
    maxInFlightPerConnection: Int = 1024, maxConnections: Int = ConnectionLimit.defaultLimit,
    frameTimeout: Duration = .seconds(60),
    _ body: @Sendable (_ port: Int, _ server: RPCServer) async throws -> T
) async throws -> T {
    let server = RPCServer(
        router: router,
        configuration: .init(
            host: host, port: port, maxFrameBytes: maxFrameBytes, maxInFlightPerConnection: maxInFlightPerConnection,
            frameTimeout: frameTimeout),
        connections: ConnectionLimit(limit: maxConnections), logger: Logger(label: "test"))
    let group = ServiceGroup(
        configuration: .init(services: [.init(service: server)], logger: Logger(label: "test")))
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        defer { tasks.cancelAll() }
        let port = try await server.listeningPort()
        let result = try await body(port, server)
        await group.triggerGracefulShutdown()
        try await tasks.next()
        return result
    }
}
