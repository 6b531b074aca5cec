import AviaryJSON
import Foundation
import Logging
import RPC
import TestSupport
import Testing

/// A real service executable (social-graph; any would do) started against real Postgres and Redis: the
/// runtime every service shares.
@Suite struct ServiceRuntimeTests {
    /// With `redisThroughSocket`, Redis's Unix socket where it has one, as the local stack uses it.
    private func environment(redisThroughSocket: Bool = false) async throws -> [String: String] {
        let postgres = try await TestServers.postgres()
        let redis = try await TestServers.redis()
        return [
            "AVIARY_POSTGRES_URL": try await postgres.makeDatabase(),
            "AVIARY_REDIS_URL": redisThroughSocket ? redis.socketURL ?? redis.url : redis.url,
            "AVIARY_RPC_PORT": "0",
            "AVIARY_ADMIN_PORT": "0",
        ]
    }

    @Test func answersDiscoverHealthAndAdminEndpoints() async throws {
        let service = try await ServiceProcess.start(
            executable: "aviary-social-graph", environment: try await environment(redisThroughSocket: true))
        defer { service.kill() }
        let client = RPCClient(configuration: .init(addresses: [service.rpcAddress]), logger: Logger(label: "test"))
        let health = try await client.call("system.health", as: JSONValue.self)
        #expect(health["status"] == "ok")
        #expect(health["service"] == "social-graph")
        #expect(health["dependencies"] == ["postgres": "ok", "redis": "ok"])
        // The git revision is built in (deploy/build-release.sh checks it against --version).
        #expect(health["revision"]?.stringValue?.isEmpty == false)
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

    @Test func servesOnTheConfiguredNumberOfEventLoops() async throws {
        // One more than the default (one per core), so the setting is what the count shows.
        let loops = ProcessInfo.processInfo.activeProcessorCount + 1
        var environment = try await environment()
        environment["AVIARY_EVENT_LOOPS"] = String(loops)
        let service = try await ServiceProcess.start(executable: "aviary-social-graph", environment: environment)
        defer { service.kill() }
        let client = RPCClient(configuration: .init(addresses: [service.rpcAddress]), logger: Logger(label: "test"))
        _ = try await client.call("system.health", as: JSONValue.self)
        await client.shutdown()
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(service.pid)/task")
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/\(service.pid)/task/\($0)/comm", encoding: .utf8) }
        // SwiftNIO names the threads of its shared event-loop group NIO-SGLTN-<group>-#<loop>.
        #expect(names.filter { $0.hasPrefix("NIO-SGLTN-") }.count == loops)
    }

    @Test func sigtermWithAnIdleClientExitsLongBeforeTheDrainTimeout() async throws {
        let service = try await ServiceProcess.start(executable: "aviary-social-graph", environment: try await environment())
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

    /// systemd's notify protocol from the real executable: `READY=1` once it serves, `WATCHDOG=1` at
    /// half of `WATCHDOG_USEC`, and `STOPPING=1` as soon as SIGTERM starts the drain.
    @Test func tellsSystemdItIsReadyAliveAndStopping() async throws {
        let socket = try NotifySocket()
        var environment = try await environment()
        environment["NOTIFY_SOCKET"] = socket.address
        environment["WATCHDOG_USEC"] = "400000"
        let service = try await ServiceProcess.start(executable: "aviary-social-graph", environment: environment)
        defer { service.kill() }
        #expect(try await socket.receive(timeout: .seconds(10)) == "READY=1\nSTATUS=serving")
        #expect(try await socket.receive(timeout: .seconds(10)) == "WATCHDOG=1")
        #expect(try await socket.receive(timeout: .seconds(10)) == "WATCHDOG=1")
        service.terminate()
        var stopping = false
        while let message = try await socket.receive(timeout: .seconds(10)) {
            if message == "STOPPING=1\nSTATUS=draining" {
                stopping = true
                break
            }
            #expect(message == "WATCHDOG=1")
        }
        #expect(stopping)
        #expect(await service.waitForExit(timeout: .seconds(15)) == 0)
    }

    @Test func twoInstancesStartingTogetherMigrateOnce() async throws {
        var debugging = try await environment()
        debugging["AVIARY_LOG_LEVEL"] = "debug"
        let environment = debugging
        async let first = ServiceProcess.start(executable: "aviary-social-graph", environment: environment)
        async let second = ServiceProcess.start(executable: "aviary-social-graph", environment: environment)
        let (a, b) = try await (first, second)
        defer {
            a.kill()
            b.kill()
        }
        // Each migration is applied by exactly one of them; the other finds it done.
        let applied = [a.logText(), b.logText()].map { log in
            log.split(separator: "\n").filter { $0.contains("applied migration") }
        }
        let all = applied[0] + applied[1]
        #expect(!all.isEmpty)
        let names = all.compactMap { line in line.range(of: "applied migration").map { String(line[$0.upperBound...]) } }
        #expect(Set(names).count == names.count, "a migration applied twice: \(names)")
    }

    /// A flood of connections beyond AVIARY_MAX_CONNECTIONS is refused (told why, then closed), so
    /// the service keeps descriptors free and keeps serving. Out of descriptors it could not: every
    /// accept would fail while the listening socket stays readable, and an event loop would spin a core.
    @Test func connectionsBeyondTheLimitAreRefusedBeforeDescriptorsRunOut() async throws {
        var environment = try await environment()
        environment["AVIARY_MAX_CONNECTIONS"] = "16"
        let service = try await ServiceProcess.start(executable: "aviary-social-graph", environment: environment)
        defer { service.kill() }
        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(service.pid)/fd").count
        try limitFileDescriptors(of: service.pid, to: open + 32)
        // The kernel completes these connections whatever the service does with them.
        let health = #"{"jsonrpc":"2.0","id":1,"method":"system.health"}"# + "\n"
        let flood = try (0..<64).map { _ in try RPCLineClient(port: service.rpcPort) }
        // Which 16 are admitted is not their order of connecting: each event loop sets up its share
        // of the accepted connections on its own.
        // An admitted one is answered, though its health may say "degraded" while the flood leaves
        // the service no descriptor for a dependency connection; that it is served is what counts.
        var admitted: [RPCLineClient] = []
        var refused = 0
        var other: [String] = []
        for client in flood {
            try? client.send(health)
            let frame = await client.readFrame(timeout: .seconds(10))
            if let frame, frame.contains(#""result":"#) {
                admitted.append(client)
            } else if let frame, frame.contains("-32050") && frame.contains("(16)") {
                refused += 1
            } else {
                other.append(frame ?? "no answer in 10 s")
            }
        }
        #expect(admitted.count == 16 && refused == 48, "admitted \(admitted.count), refused \(refused), else \(other)")
        let spent = try Self.cpuSeconds(of: service.pid)
        try await Task.sleep(for: .seconds(2))
        let used = try Self.cpuSeconds(of: service.pid) - spent
        #expect(used < 0.5, "the service used \(used) s of CPU in 2 s holding its connections")
        // The admitted ones still answer.
        let first = try #require(admitted.first)
        try first.send(health)
        #expect(await first.readFrame()?.contains(#""status":"ok""#) == true)
    }

    /// The admin port counts against the same limit: with the RPC port holding every connection
    /// allowed, an HTTP request is answered 503 with the reason, and served again once one closes.
    @Test func theAdminPortSharesTheConnectionLimit() async throws {
        var environment = try await environment()
        environment["AVIARY_MAX_CONNECTIONS"] = "4"
        let service = try await ServiceProcess.start(executable: "aviary-social-graph", environment: environment)
        defer { service.kill() }
        var held: [RPCLineClient] = []
        for _ in 0..<4 {
            let client = try RPCLineClient(port: service.rpcPort)
            try client.send(#"{"jsonrpc":"2.0","id":1,"method":"system.health"}"# + "\n")
            #expect(await client.readFrame()?.contains(#""status":"ok""#) == true)
            held.append(client)
        }
        let refused = try AdminHTTP.get("/healthz", port: service.adminPort)
        #expect(refused.status == 503 && refused.body.contains("(4)"))
        held.removeLast()
        #expect(await eventually { (try? AdminHTTP.get("/healthz", port: service.adminPort))?.status == 200 })
    }

    /// The services (all but auth) allocate with jemalloc, linked before libc so that its malloc
    /// is everyone's: glibc's malloc would have grown the program break (`[heap]`) by the first
    /// request.
    @Test func allocatesWithJemalloc() async throws {
        let service = try await ServiceProcess.start(executable: "aviary-social-graph", environment: try await environment())
        defer { service.kill() }
        let client = RPCClient(configuration: .init(addresses: [service.rpcAddress]), logger: Logger(label: "test"))
        _ = try await client.call("rpc.discover", as: JSONValue.self)
        await client.shutdown()
        // Read to the end: procfs reports a size of 0, and reading by size gets only the first page.
        let file = try #require(FileHandle(forReadingAtPath: "/proc/\(service.pid)/maps"))
        let maps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        try file.close()
        #expect(maps.contains("/libjemalloc.so"))
        #expect(!maps.contains("[heap]"), "glibc's malloc grew the program break")
    }

    /// A service started under a soft descriptor limit below the hard one raises it to the hard
    /// one, as its default AVIARY_MAX_CONNECTIONS follows the soft limit.
    @Test func raisesItsSoftDescriptorLimitToTheHardOne() async throws {
        let service = try await ServiceProcess.start(
            executable: "aviary-social-graph", environment: try await environment(), fileDescriptorLimit: (512, 4096))
        defer { service.kill() }
        let limits = try String(contentsOfFile: "/proc/\(service.pid)/limits", encoding: .utf8)
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }
        #expect(line?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).prefix(2) == ["4096", "4096"])
    }

    /// User and system CPU time `pid` has used, from /proc.
    private static func cpuSeconds(of pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name (which may hold spaces) end at ')'; utime and stime are the 12th and 13th.
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        return Double(Int(fields[11])! + Int(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test func badConfigurationIsReportedClearly() async throws {
        var environment = try await environment()
        environment["AVIARY_RPC_PORT"] = "abc"
        do {
            let service = try await ServiceProcess.start(
                executable: "aviary-social-graph", environment: environment, readyTimeout: .seconds(10))
            service.kill()
            Issue.record("the service started with AVIARY_RPC_PORT=abc")
        } catch {
            #expect("\(error)".contains("AVIARY_RPC_PORT must be an integer"))
        }
    }
}
