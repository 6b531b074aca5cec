import AviaryJSON
import Foundation
import Logging
@testable import RPC
import TestSupport
import Locking
import Testing

@Suite struct ClientTests {
    @Test func typedCallsAndErrors() async throws {
        try await withRPCServer(makeTestRouter()) { port, _ in
            let client = RPCClient(configuration: .init(addresses: ["127.0.0.1:\(port)"]), logger: Logger(label: "test"))
            defer { Task { await client.shutdown() } }
            let difference = try await client.call("subtract", params: SubtractParams(minuend: 10, subtrahend: 4), as: Int.self)
            #expect(difference == 6)
            await #expect(throws: RPCError.methodNotFound("nope")) {
                try await client.call("nope", as: Empty.self)
            }
        }
    }

    /// Success results are sliced out of the frame rather than decoded; errors still throw.
    @Test func rawResultsPassThroughIntact() async throws {
        try await withRPCServer(makeTestRouter()) { port, _ in
            let client = RPCClient(configuration: .init(addresses: ["127.0.0.1:\(port)"]), logger: Logger(label: "test"))
            let value: JSONValue = ["text": "a } \"quoted\" ]", "list": [1, .double(2.5), nil, true], "nested": ["empty": [:]]]
            let params = try RawJSON(encoding: ["value": value])
            let raw = try await client.send("echo", params: params).result()
            #expect(try JSONDecoder().decode(JSONValue.self, from: Data(raw.bytes)) == value)
            #expect(try await client.call("echo", params: ["value": value], as: JSONValue.self) == value)
            await #expect(throws: RPCError.methodNotFound("nope")) {
                try await client.send("nope").result()
            }
            await client.shutdown()
        }
    }

    @Test func metaTravelsInParams() async throws {
        try await withRPCServer(makeTestRouter()) { port, _ in
            let client = RPCClient(configuration: .init(addresses: ["127.0.0.1:\(port)"]), logger: Logger(label: "test"))
            let meta = RequestMeta(token: "good-token", service: "s", traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
            let echoed = try await client.call("meta", meta: meta, timeout: .seconds(30), as: RequestMeta.self)
            #expect(echoed.token == "good-token")
            #expect(echoed.service == "s")
            #expect(echoed.traceparent == meta.traceparent)
            #expect((echoed.timeoutMs ?? 0) > 20_000 && (echoed.timeoutMs ?? 0) <= 30_000)
            await client.shutdown()
        }
    }

    @Test func callTimesOut() async throws {
        try await withRPCServer(makeTestRouter()) { port, _ in
            let client = RPCClient(configuration: .init(addresses: ["127.0.0.1:\(port)"]), logger: Logger(label: "test"))
            let started = ContinuousClock.now
            await #expect(throws: RPCError.self) {
                try await client.call("sleep", params: SleepParams(milliseconds: 20_000), timeout: .milliseconds(100), as: Int.self)
            }
            // Far below the handler's 20 s even when the whole suite loads the machine.
            #expect(ContinuousClock.now - started < .seconds(5))
            await client.shutdown()
        }
    }

    /// Once a connection has closed, NIO has taken its handlers out of the pipeline, so a call written
    /// then reaches no handler and no timer: it must still fail, as a call that was never sent.
    @Test func aCallOnAClosedConnectionFailsInsteadOfWaiting() async throws {
        try await withRPCServer(makeTestRouter()) { port, _ in
            let connection = try await RPCClientConnection.connect(host: "127.0.0.1", port: port)
            #expect(try await connection.call("subtract", params: SubtractParams(minuend: 3, subtrahend: 1), as: Int.self) == 2)
            await connection.close()
            let result = await outcome(within: .seconds(5)) {
                try await connection.call("subtract", params: SubtractParams(minuend: 3, subtrahend: 1), as: Int.self)
            }
            let outcome = try #require(result, "the call never completed")
            #expect(throws: RPCError.unavailable("the connection to the service closed before the call was sent")) {
                try outcome.get()
            }
        }
    }

    @Test func spreadsOverInstancesAndSkipsADeadOne() async throws {
        let deadPort = try freePort()
        try await withRPCServer(makeTestRouter()) { livePort, _ in
            let client = RPCClient(
                configuration: .init(addresses: ["127.0.0.1:\(deadPort)", "127.0.0.1:\(livePort)"]), logger: Logger(label: "test"))
            for _ in 0..<20 {
                let data = try await client.call("get_data", idempotent: true, as: JSONValue.self)
                #expect(data == ["hello", 5])
            }
            await client.shutdown()
        }
    }

    @Test func anInstanceFailingItsHealthCheckGetsNoCallsUntilItPassesAgain() async throws {
        struct Named: Codable, Sendable { var name: String }
        struct Health: Codable, Sendable { var status: String }
        let sickStatus = Locked("ok")
        @Sendable func router(_ name: String, status: @escaping @Sendable () -> String) -> RPCRouter {
            var router = RPCRouter(service: "test", version: "1.0.0", logger: Logger(label: "test"))
            router.register("name", summary: "The instance's name.", access: .anonymous) { (_: Empty, _) in Named(name: name) }
            router.register("system.health", summary: "Health.", access: .anonymous) { (_: Empty, _) in
                // "hang": a process whose port still accepts but that no longer answers in time.
                if status() == "hang" { try await Task.sleep(for: .seconds(2)) }
                return Health(status: status())
            }
            return router
        }
        let (sick, well) = (router("sick", status: { sickStatus.withLock { $0 } }), router("well", status: { "ok" }))
        try await withRPCServer(sick) { sickPort, _ in
            try await withRPCServer(well) { wellPort, _ in
                var configuration = RPCClient.Configuration(addresses: ["127.0.0.1:\(sickPort)", "127.0.0.1:\(wellPort)"])
                configuration.healthCheckInterval = .milliseconds(50)
                configuration.healthCheckTimeout = .milliseconds(200)
                let client = RPCClient(configuration: configuration, logger: Logger(label: "test"))
                let names = { @Sendable (calls: Int) async throws -> Set<String> in
                    var names = Set<String>()
                    for _ in 0..<calls { names.insert(try await client.call("name", as: Named.self).name) }
                    return names
                }
                let before = try await names(8)
                #expect(before == ["sick", "well"])
                sickStatus.withLock { $0 = "degraded" }
                #expect(await eventually { (try? await names(8)) == ["well"] })
                sickStatus.withLock { $0 = "ok" }
                #expect(await eventually { (try? await names(8)) == ["sick", "well"] })
                sickStatus.withLock { $0 = "hang" }
                #expect(await eventually { (try? await names(8)) == ["well"] })
                sickStatus.withLock { $0 = "ok" }
                #expect(await eventually { (try? await names(8)) == ["sick", "well"] })
                await client.shutdown()
            }
        }
    }

    @Test func noReachableInstanceIsUnavailable() async throws {
        let client = RPCClient(configuration: .init(addresses: ["127.0.0.1:\(try freePort())"]), logger: Logger(label: "test"))
        await #expect {
            try await client.call("get_data", as: JSONValue.self)
        } throws: { error in
            (error as? RPCError)?.reason == "unavailable"
        }
        await client.shutdown()
    }

    /// An instance that does not complete the TCP handshake (its accept queue is full, so the
    /// kernel drops the SYNs) holds a call no longer than the call's own time budget.
    @Test func aCallTimesOutWhileItsConnectionIsStillBeingMade() async throws {
        let (listener, port) = Self.listeningSocket(backlog: 0)
        defer { close(listener) }
        // Fill the queue that nobody accepts from (one connection, with a backlog of 0).
        let filler = try RPCLineClient(port: port)
        defer { _ = filler }
        var configuration = RPCClient.Configuration(addresses: ["127.0.0.1:\(port)"])
        configuration.connectTimeout = .seconds(6)
        let client = RPCClient(configuration: configuration, logger: Logger(label: "test"))
        let started = ContinuousClock.now
        await #expect {
            try await client.call("get_data", timeout: .milliseconds(300), as: JSONValue.self)
        } throws: { error in
            (error as? RPCError)?.reason == "timeout"
        }
        #expect(ContinuousClock.now - started < .seconds(3))
        await client.shutdown()  // waits for the connection attempt to give up
    }

    /// An instance that stops reading (here one that never accepts the connection: the kernel
    /// queues it, and its bytes, all the same) holds at most the backlog limit of a caller's calls
    /// unsent: later ones fail at once as unavailable instead of queueing until they time out.
    @Test func callsToAnInstanceThatStopsReadingFailAtOncePastTheBacklogLimit() async throws {
        // A small receive buffer (the queued connection inherits it), so that the kernel holds little
        // of what is sent whatever the host's TCP buffer settings.
        let (listener, port) = Self.listeningSocket(backlog: 16, receiveBuffer: 64 << 10)
        defer { close(listener) }
        var configuration = RPCClient.Configuration(addresses: ["127.0.0.1:\(port)"])
        configuration.connectionsPerAddress = 1
        let client = RPCClient(configuration: configuration, logger: Logger(label: "test"))
        // 500 calls of 64 KiB: 32 MiB, far past the kernel's buffers and the 8 MiB limit.
        let value = JSONValue.string(String(repeating: "x", count: 64 << 10))
        let started = ContinuousClock.now
        let outcomes = await withTaskGroup(of: (String?, Duration).self) { group in
            for _ in 0..<500 {
                group.addTask {
                    do {
                        _ = try await client.call("echo", params: ["value": value], timeout: .seconds(5), as: JSONValue.self)
                        return (nil, ContinuousClock.now - started)
                    } catch {
                        return ((error as? RPCError)?.reason, ContinuousClock.now - started)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        // "At once": well before the 5 s timeout the queued calls would otherwise run into (on a
        // loaded machine, encoding 500 params of 64 KiB alone takes a while).
        let refusedAtOnce = outcomes.filter { $0.0 == "unavailable" && $0.1 < .seconds(4) }.count
        #expect(refusedAtOnce >= 100, "refused at once: \(refusedAtOnce); timed out: \(outcomes.filter { $0.0 == "timeout" }.count)")
        await client.shutdown()
    }

    /// A socket listening on a free port of 127.0.0.1 that nobody accepts from, and that port.
    private static func listeningSocket(backlog: Int32, receiveBuffer: Int32? = nil) -> (Int32, Int) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                _ = bind(listener, pointer, length)
                return getsockname(listener, pointer, &length)
            }
        }
        if var receiveBuffer {
            _ = setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
        }
        #expect(listen(listener, backlog) == 0)
        return (listener, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test func reconnectsAfterTheServerComesBack() async throws {
        let port = try freePort()
        let router = makeTestRouter()
        let client = RPCClient(configuration: .init(addresses: ["127.0.0.1:\(port)"]), logger: Logger(label: "test"))
        try await withRPCServer(router, port: port) { _, _ in
            let data = try await client.call("get_data", as: JSONValue.self)
            #expect(data == ["hello", 5])
        }
        await #expect(throws: RPCError.self) { try await client.call("get_data", as: JSONValue.self) }
        try await withRPCServer(router, port: port) { _, _ in
            var answered = false
            for _ in 0..<50 where !answered {
                answered = (try? await client.call("get_data", as: JSONValue.self)) != nil
                if !answered { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(answered)
        }
        await client.shutdown()
    }

    /// After an instance restarts, the pool's old connections are dead: the first calls, even ones
    /// that are not idempotent, go out on new connections instead of failing.
    @Test func firstCallsAfterARestartSucceed() async throws {
        let port = try freePort()
        let router = makeTestRouter()
        var configuration = RPCClient.Configuration(addresses: ["127.0.0.1:\(port)"])
        configuration.connectionsPerAddress = 4
        let client = RPCClient(configuration: configuration, logger: Logger(label: "test"))
        try await withRPCServer(router, port: port) { _, _ in
            for _ in 0..<8 { _ = try await client.call("subtract", params: SubtractParams(minuend: 2, subtrahend: 1), as: Int.self) }
        }
        // A restart takes a moment, long enough for the client to see its connections closed; a call
        // written in the instant before it sees that is lost like any call in flight at a crash.
        #expect(await eventually { await client.openConnectionCount() == 0 })
        try await withRPCServer(router, port: port) { _, _ in
            for _ in 0..<8 {
                let difference = try await client.call("subtract", params: SubtractParams(minuend: 2, subtrahend: 1), as: Int.self)
                #expect(difference == 1)
            }
        }
        await client.shutdown()
    }
}
