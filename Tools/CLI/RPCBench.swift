import ArgumentParser
import AviaryJSON
import Logging
import RPC

/// RPC echo over loopback, server and client in this process.
struct RPCBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rpc",
        abstract: "RPC echo: one pipelined connection (target 50,000 calls/s); 64 connections with one call each (target 25,000 calls/s, p99 < 5 ms).")

    @Option(help: "Seconds per scenario.")
    var seconds: Int = 5

    @Option(help: "Calls in flight on the pipelined connection.")
    var window: Int = 128

    struct EchoParams: Codable, Sendable {
        var text: String
    }

    func run() async throws {
        var router = RPCRouter(service: "bench", version: "0", logger: Logger(label: "bench"))
        router.register("echo", summary: "Returns its params.", access: .anonymous) { (params: EchoParams, _) in params }
        let server = RPCServer(router: router, configuration: .init(port: 0), logger: Logger(label: "bench"))
        let serverTask = Task { try await server.run() }
        defer { serverTask.cancel() }
        let port = try await server.listeningPort()
        let params = try RawJSON(encoding: EchoParams(text: "hello, aviary"))

        let pipelined = try await RPCClientConnection.connect(host: "127.0.0.1", port: port)
        let one = try await runLoad(workers: window, duration: .seconds(seconds)) { _ in
            _ = try await pipelined.send("echo", params: params).decode(EchoParams.self)
        }
        print("rpc echo, 1 connection, \(window) pipelined:  \(one.summary)   (target ≥ 50,000 calls/s)")
        await pipelined.close()

        var connections: [RPCClientConnection] = []
        for _ in 0..<64 { connections.append(try await RPCClientConnection.connect(host: "127.0.0.1", port: port)) }
        let pool = connections
        let many = try await runLoad(workers: 64, duration: .seconds(seconds)) { worker in
            _ = try await pool[worker].send("echo", params: params).decode(EchoParams.self)
        }
        print("rpc echo, 64 connections, 1 in flight each: \(many.summary)   (target ≥ 25,000 calls/s, p99 < 5 ms)")
        for connection in connections { await connection.close() }
    }
}
