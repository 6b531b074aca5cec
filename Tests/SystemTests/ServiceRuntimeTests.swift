import Foundation
import Logging
import RPC
import TestSupport
import Testing

/// A real service executable (tweets, whose domain methods come later) started against real
/// Postgres and Redis: the runtime every service shares.
@Suite struct ServiceRuntimeTests {
    private func environment() async throws -> [String: String] {
        let postgres = try await TestServers.postgres()
        let redis = try await TestServers.redis()
        return [
            "AVIARY_POSTGRES_URL": try await postgres.makeDatabase(),
            "AVIARY_REDIS_URL": redis.url,
            "AVIARY_RPC_PORT": "0",
            "AVIARY_ADMIN_PORT": "0",
        ]
    }

    @Test func answersDiscoverHealthAndAdminEndpoints() async throws {
        let service = try await ServiceProcess.start(executable: "aviary-tweets", environment: try await environment())
        defer { service.kill() }
        let client = RPCClient(configuration: .init(addresses: [service.rpcAddress]), logger: Logger(label: "test"))
        let health = try await client.call("system.health", as: JSONValue.self)
        #expect(health["status"] == "ok")
        #expect(health["service"] == "tweets")
        #expect(health["dependencies"] == ["postgres": "ok", "redis": "ok"])
        let discover = try await client.call("rpc.discover", as: JSONValue.self)
        #expect(discover["openrpc"]?.stringValue?.hasPrefix("1.") == true)
        #expect(discover["methods"]?.arrayValue?.contains { $0["name"] == "system.health" } == true)
        await client.shutdown()

        #expect(try AdminHTTP.get("/healthz", port: service.adminPort).status == 200)
        let ready = try AdminHTTP.get("/readyz", port: service.adminPort)
        #expect(ready.status == 200)
        let metrics = try AdminHTTP.get("/metrics", port: service.adminPort)
        #expect(metrics.status == 200)
        #expect(metrics.body.contains("rpc_server_requests_total"))
        #expect(metrics.body.contains(#"rpc_method="system.health""#))
    }

    @Test func sigtermWithAnIdleClientExitsLongBeforeTheDrainTimeout() async throws {
        let service = try await ServiceProcess.start(executable: "aviary-tweets", environment: try await environment())
        defer { service.kill() }
        let idle = try RPCLineClient(port: service.rpcPort)
        try idle.send(#"{"jsonrpc":"2.0","id":1,"method":"system.health"}"# + "\n")
        #expect(await idle.readFrame() != nil)
        let signalled = ContinuousClock.now
        service.terminate()
        let status = await service.waitForExit(timeout: .seconds(5))
        #expect(status == 0)
        // The drain timeout is 10 s; an idle client must not hold shutdown anywhere near it.
        // The bound leaves room for a loaded CI machine.
        #expect(ContinuousClock.now - signalled < .seconds(3))
        #expect(await idle.isClosedByPeer(within: .milliseconds(100)))
    }

    @Test func twoInstancesStartingTogetherMigrateOnce() async throws {
        var environment = try await environment()
        environment["AVIARY_LOG_LEVEL"] = "debug"
        async let first = ServiceProcess.start(executable: "aviary-tweets", environment: environment)
        async let second = ServiceProcess.start(executable: "aviary-tweets", environment: environment)
        let (a, b) = try await (first, second)
        defer {
            a.kill()
            b.kill()
        }
        let applied = [a.logText(), b.logText()].map { $0.components(separatedBy: "applied migration").count - 1 }
        #expect(applied.reduce(0, +) == 1)  // the shared-secrets migration, applied by exactly one of them
    }

    @Test func badConfigurationIsReportedClearly() async throws {
        var environment = try await environment()
        environment["AVIARY_RPC_PORT"] = "abc"
        do {
            let service = try await ServiceProcess.start(
                executable: "aviary-tweets", environment: environment, readyTimeout: .seconds(10))
            service.kill()
            Issue.record("the service started with AVIARY_RPC_PORT=abc")
        } catch {
            #expect("\(error)".contains("AVIARY_RPC_PORT must be an integer"))
        }
    }
}
