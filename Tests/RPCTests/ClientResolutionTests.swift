import Locking
import Logging
import RPC
import TestSupport
import Testing

/// A service address given as a DNS name stands for every instance the name resolves to, and is
/// resolved again while the client runs (a compose service scaled up, a Kubernetes headless Service).
@Suite struct ClientResolutionTests {
    /// What the name resolves to, changed by the test.
    final class Zone: Sendable {
        let addresses = Locked<[String]>([])
        func resolve(_ host: String) async throws -> [String] {
            guard host == "timeline.internal" else { throw HostResolutionError(host: host, message: "unknown") }
            return addresses.withLock { $0 }
        }
    }

    /// A router answering `whoami` with `name`, so the test sees which instance answered.
    static func router(_ name: String) -> RPCRouter {
        var router = RPCRouter(service: "test", version: "1.0.0", logger: Logger(label: "test"))
        router.register("whoami", summary: "The instance's name.", access: .anonymous) { (_: Empty, _) in name }
        return router
    }

    @Test func followsTheInstancesANameResolvesTo() async throws {
        let port = try freePort()
        let zone = Zone()
        zone.addresses.withLock { $0 = ["127.0.0.1"] }
        try await withRPCServer(Self.router("first"), host: "127.0.0.1", port: port) { _, _ in
            try await withRPCServer(Self.router("second"), host: "127.0.0.2", port: port) { _, _ in
                var configuration = RPCClient.Configuration(addresses: ["timeline.internal:\(port)"])
                configuration.resolveInterval = .milliseconds(50)
                configuration.resolve = { try await zone.resolve($0) }
                let client = RPCClient(configuration: configuration, logger: Logger(label: "test"))
                defer { Task { await client.shutdown() } }

                #expect(await Self.waitFor(client, instances: ["127.0.0.1:\(port)"]))
                #expect(try await Self.answers(client, calls: 10) == ["first"])

                // Scaled up: both instances take calls.
                zone.addresses.withLock { $0 = ["127.0.0.1", "127.0.0.2"] }
                #expect(await Self.waitFor(client, instances: ["127.0.0.1:\(port)", "127.0.0.2:\(port)"]))
                #expect(try await Self.answers(client, calls: 10) == ["first", "second"])

                // Scaled down to the other one: the first gets no more calls.
                zone.addresses.withLock { $0 = ["127.0.0.2"] }
                #expect(await Self.waitFor(client, instances: ["127.0.0.2:\(port)"]))
                #expect(try await Self.answers(client, calls: 10) == ["second"])

                // A name that stops resolving keeps the instances it had.
                zone.addresses.withLock { $0 = [] }
                try await Task.sleep(for: .milliseconds(200))
                #expect(client.instances == ["127.0.0.2:\(port)"])
            }
        }
    }

    @Test func systemResolverFindsLocalhost() async throws {
        #expect(try await HostResolver.addresses(of: "localhost").contains("127.0.0.1"))
        await #expect(throws: HostResolutionError.self) {
            try await HostResolver.addresses(of: "no-such-host.invalid")
        }
    }

    static func answers(_ client: RPCClient, calls: Int) async throws -> Set<String> {
        var names: Set<String> = []
        for _ in 0..<calls { names.insert(try await client.call("whoami", as: String.self)) }
        return names
    }

    static func waitFor(_ client: RPCClient, instances: Set<String>) async -> Bool {
        await eventually(timeout: .seconds(5)) { Set(client.instances) == instances }
    }
}
