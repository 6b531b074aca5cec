import NIOPosix
import RPC
import TestSupport
import Testing

@testable import Redis

@Suite struct RedisClientTests {
    @Test func storesBinaryValuesExactly() async throws {
        let redis = try await TestServers.redis()
        try await withClient(redis) { client in
            let key = uniqueName("binary")
            let allBytes = (0...255).map { UInt8($0) }
            let large = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255) }
            for value in [allBytes, [], large] {
                try await client.set(key, to: RedisArgument(value))
                #expect(try await client.get(key) == value)
                #expect(
                    try await client.send(["STRLEN", RedisArgument(key)]) == .integer(Int64(value.count)))
            }
            // Keys are binary-safe too, and an empty value is not a missing one.
            let binaryKey = RedisArgument(Array(key.utf8) + [0, 10, 13, 255])
            _ = try await client.send(["SET", binaryKey, RedisArgument([])])
            #expect(try await client.send(["GET", binaryKey]) == .bulkString([]))
            #expect(try await client.get(uniqueName("missing")) == nil)
            try await client.delete([key])
            _ = try await client.send(["DEL", binaryKey])
        }
    }

    @Test func errorRepliesThrowWithTheMessageHidden() async throws {
        let redis = try await TestServers.redis()
        try await withClient(redis) { client in
            let key = uniqueName("list")
            _ = try await client.send(["RPUSH", RedisArgument(key), "a"])
            let error = try await #require(throws: RedisError.self) {
                try await client.send(["GET", RedisArgument(key)])
            }
            #expect(error.code == .serverError)
            #expect(error.serverMessage?.hasPrefix("WRONGTYPE") == true)
            #expect(!error.description.contains("WRONGTYPE"))
            #expect(String(reflecting: error).contains("WRONGTYPE"))
            // The connection stays usable after an error reply.
            #expect(try await client.send(["LLEN", RedisArgument(key)]) == .integer(1))
            try await client.delete([key])
        }
    }

    @Test func conveniencesAndReachability() async throws {
        let redis = try await TestServers.redis()
        try await withClient(redis) { client in
            #expect(await client.isReachable())
            let key = uniqueName("expiring")
            try await client.set(key, to: "v", expiringAfter: .seconds(60))
            let ttl = try await client.send(["PTTL", RedisArgument(key)]).int ?? 0
            #expect(ttl > 50_000 && ttl <= 60_000)
            #expect(try await client.expire(key, after: .milliseconds(50)))
            try await eventually("the key to expire") { try await client.get(key) == nil }
            #expect(try await client.expire(key, after: .seconds(1)) == false)
            #expect(try await client.delete([key]) == 0)
        }
    }

    @Test func pipelinesThousandCommandsWithAnErrorInTheMiddle() async throws {
        let redis = try await TestServers.redis()
        try await withClient(redis) { client in
            let prefix = uniqueName("pipeline")
            let listKey = prefix + ":list"
            _ = try await client.send(["RPUSH", RedisArgument(listKey), "x"])
            let commands: [[RedisArgument]] = (0..<1000).map { index in
                index == 500
                    ? ["INCR", RedisArgument(listKey)]  // WRONGTYPE
                    : ["SET", RedisArgument("\(prefix):\(index)"), RedisArgument(index)]
            }
            let replies = try await client.pipeline(commands)
            #expect(replies.count == 1000)
            guard case .error(let message) = replies[500] else {
                Issue.record("expected an error reply, got \(replies[500])")
                return
            }
            #expect(message.hasPrefix("WRONGTYPE"))
            #expect(replies.enumerated().allSatisfy { $0.offset == 500 || $0.element == .simpleString("OK") })

            let values = try await client.pipeline(
                (0..<1000).map { ["GET", RedisArgument("\(prefix):\($0)")] })
            #expect(values.map(\.int) == (0..<1000).map { $0 == 500 ? nil : $0 })
            #expect(try await client.pipeline([]) == [])
            try await client.delete([listKey] + (0..<1000).map { "\(prefix):\($0)" })
        }
    }

    @Test func evaluateFallsBackToEvalAfterScriptFlush() async throws {
        let redis = try await TestServers.redis()
        try await withClient(redis) { client in
            // A source no one has loaded yet: the first call must fall back to EVAL.
            let script = RedisScript(
                "-- \(uniqueName("script"))\nreturn redis.call('INCRBY', KEYS[1], ARGV[1])")
            let key = uniqueName("counter")
            let exists: () async throws -> RESPValue = {
                try await client.send(["SCRIPT", "EXISTS", RedisArgument(script.sha1)])
            }
            #expect(try await exists() == .array([.integer(0)]))
            #expect(try await client.evaluate(script, keys: [key], arguments: [2]) == .integer(2))
            #expect(try await exists() == .array([.integer(1)]))
            #expect(try await client.evaluate(script, keys: [key], arguments: [3]) == .integer(5))

            _ = try await client.send(["SCRIPT", "FLUSH"])
            #expect(try await exists() == .array([.integer(0)]))
            #expect(try await client.evaluate(script, keys: [key], arguments: [10]) == .integer(15))
            // Our SHA-1 is the name Redis gives the script.
            #expect(
                try await client.send(["SCRIPT", "LOAD", RedisArgument(script.source)]).string == script.sha1)

            let failing = RedisScript("return redis.error_reply('BOOM \(uniqueName("x"))')")
            let error = try await #require(throws: RedisError.self) {
                try await client.evaluate(failing)
            }
            #expect(error.serverMessage?.hasPrefix("BOOM") == true)
            try await client.delete([key])
        }
    }

    @Test func twoHundredConcurrentCommandsShareFourConnections() async throws {
        try await withPrivateRedis { redis in
            try await withClient(redis, poolSize: 4) { client in
                let prefix = uniqueName("concurrent")
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<200 {
                        group.addTask {
                            let key = "\(prefix):\(index)"
                            try await client.set(key, to: RedisArgument(index))
                            _ = try await client.send(["INCR", RedisArgument(prefix + ":total")])
                            #expect(try await client.send(["GET", RedisArgument(key)]).int == index)
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(try await client.send(["GET", RedisArgument(prefix + ":total")]).int == 200)
                let info = try await client.send(["INFO", "clients"]).string ?? ""
                let connected = info.split(whereSeparator: \.isNewline)
                    .first { $0.hasPrefix("connected_clients:") }
                    .flatMap { Int($0.dropFirst("connected_clients:".count)) }
                #expect(
                    connected.map { (1...4).contains($0) } == true,
                    "connected_clients: \(String(describing: connected))")
            }
        }
    }

    /// Callers on one event loop join the requests written there in the same tick rather than each
    /// taking an idle connection or opening one: their commands leave together.
    @Test func callersOnOneLoopJoinTheRequestsOfTheirTick() async throws {
        try await withPrivateRedis { redis in
            try await withClient(redis, poolSize: 4) { client in
                let executor = EventLoopTaskExecutor(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
                let connected = try await Task(executorPreference: executor) {
                    #expect(try await client.send(["PING"]) == .simpleString("PONG"))
                    // Added from the loop, the callers all start within one tick.
                    try await withThrowingTaskGroup(of: RESPValue.self) { group in
                        for _ in 0..<(RedisConnectionPool.gatheringLimit / 2) {
                            group.addTask { try await client.send(["PING"]) }
                        }
                        for try await reply in group { #expect(reply == .simpleString("PONG")) }
                    }
                    return try await client.send(["INFO", "clients"]).string ?? ""
                }.value
                #expect(connected.contains("connected_clients:1\r\n"), "\(connected)")
            }
        }
    }

    @Test func aBlockingCommandDoesNotHoldUpTheSharedConnection() async throws {
        let redis = try await TestServers.redis()
        try await withClient(redis, poolSize: 1) { client in
            let list = uniqueName("blocking")
            let blocked = Task { try await client.send(["BLPOP", RedisArgument(list), "5"]) }
            try await Task.sleep(for: .milliseconds(50))
            // If the BLPOP held the one shared connection, this RPUSH would wait until it timed out.
            try await client.set(list + ":other", to: "v")
            #expect(try await client.get(list + ":other") == Array("v".utf8))
            _ = try await client.send(["RPUSH", RedisArgument(list), "x"])
            #expect(try await blocked.value == .array([.bulkString(Array(list.utf8)), .bulkString(Array("x".utf8))]))
            try await client.delete([list, list + ":other"])
        }
    }

    @Test func reconnectsAfterRedisRestarts() async throws {
        try await withPrivateRedis { redis in
            try await withClient(redis, poolSize: 2) { client in
                let key = uniqueName("restart")
                // Open both pooled connections so both go stale.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<2 {
                        group.addTask {
                            _ = try await client.send(["BLPOP", RedisArgument(key + ":none"), "0.05"])
                        }
                    }
                    try await group.waitForAll()
                }
                try await client.set(key, to: "before")

                try await redis.stop()
                #expect(await client.isReachable() == false)
                let error = try await #require(throws: RedisError.self) { try await client.get(key) }
                #expect(error.code == .connectionFailed)

                try await redis.start()
                // Within the breaker's pause after the failed connect, commands are still refused.
                #expect(await eventually(timeout: .seconds(2)) { (try? await client.set(key, to: "after")) != nil })
                #expect(try await client.get(key) == Array("after".utf8))
                #expect(await client.isReachable())
            }
        }
    }

    @Test("a stalled Redis costs one command timeout; then commands fail at once until a probe is answered")
    func aStalledRedisOpensTheBreaker() async throws {
        try await withPrivateRedis { redis in
            var configuration = try RedisConfiguration(url: redis.url, poolSize: 2)
            configuration.commandTimeout = .milliseconds(300)
            let client = RedisClient(configuration: configuration, logger: testLogger)
            #expect(await client.isReachable())
            await redis.pause()
            let clock = ContinuousClock()
            let first = try await #require(throws: RedisError.self) {
                try await clock.measure { _ = try await client.send(["PING"]) }
            }
            #expect(first.code == .timeout)
            var refused: RedisError?
            let refusal = await clock.measure {
                do { _ = try await client.send(["PING"]) } catch { refused = error as? RedisError }
            }
            #expect(refused?.code == .connectionFailed)
            #expect(refusal < .milliseconds(50), "refused at once, not after the command timeout")
            await redis.resume()
            #expect(await eventually(timeout: .seconds(5)) { await client.isReachable() })
            await client.shutdown()
        }
    }

    @Test func replacesAConnectionTheServerClosed() async throws {
        let redis = try await TestServers.redis()
        try await withClient(redis, poolSize: 1) { client in
            let key = uniqueName("killed")
            try await client.set(key, to: "value")
            let id = try #require(try await client.send(["CLIENT", "ID"]).int)
            // Another connection kills ours; the next GET finds it closed and runs on a new one.
            try await withClient(redis) { other in
                _ = try await other.send(["CLIENT", "KILL", "ID", RedisArgument(id)])
            }
            #expect(try await client.get(key) == Array("value".utf8))
            #expect(try await client.send(["CLIENT", "ID"]).int != id)
            try await client.delete([key])
        }
    }

    @Test func retriesAReadWhoseConnectionDiedAfterTheRequest() async throws {
        let redis = try await TestServers.redis()
        try await withClient(redis) { direct in
            let key = uniqueName("retried")
            try await direct.set(key, to: "value")
            let proxy = try TCPProxy(targetPorts: [redis.port], dropCount: 1)
            defer { proxy.close() }
            let client = RedisClient(
                configuration: RedisConfiguration(port: proxy.port, poolSize: 1), logger: testLogger)
            #expect(try await client.get(key) == Array("value".utf8))
            await client.shutdown()
            try await direct.delete([key])
        }
    }

    @Test func doesNotRetryAWriteWhoseConnectionDiedAfterTheRequest() async throws {
        let redis = try await TestServers.redis()
        try await withClient(redis) { direct in
            let key = uniqueName("not-retried")
            let proxy = try TCPProxy(targetPorts: [redis.port], dropCount: 1)
            defer { proxy.close() }
            let client = RedisClient(
                configuration: RedisConfiguration(port: proxy.port, poolSize: 1), logger: testLogger)
            let error = try await #require(throws: RedisError.self) {
                try await client.send(["INCR", RedisArgument(key)])
            }
            #expect(error.code == .connectionFailed)
            #expect(try await direct.get(key) == nil)
            // The broken connection was replaced: the next command goes through.
            #expect(try await client.send(["INCR", RedisArgument(key)]) == .integer(1))
            await client.shutdown()
            try await direct.delete([key])
        }
    }

    @Test func connectsThroughAUnixSocket() async throws {
        let redis = try await TestServers.redis()
        // A deep $TMPDIR leaves the test server without a socket.
        guard let socketURL = redis.socketURL else { return }
        var configuration = try RedisConfiguration(url: socketURL + "?db=1")
        configuration.connectTimeout = .seconds(2)
        let client = RedisClient(configuration: configuration, logger: testLogger)
        let subscriber = RedisSubscriber(configuration: configuration, logger: testLogger)
        let key = uniqueName("socket")
        try await client.set(key, to: "over the socket")
        // Flag U: a Unix-socket client.
        let info = try await client.send(["CLIENT", "INFO"]).string ?? ""
        #expect(info.contains(" flags=U ") && info.contains(" db=1 "))
        try await withClient(redis) { tcp in
            let replies = try await tcp.pipeline([["SELECT", "1"], ["GET", RedisArgument(key)]])
            #expect(replies.last?.string == "over the socket")
        }
        let channel = uniqueName("socket-news")
        let messages = Collector(try await subscriber.subscribe(channel))
        #expect(try await client.publish("hello", to: channel) == 1)
        #expect(try await messages.wait(for: 1).map(\.text) == ["hello"])
        await subscriber.shutdown()
        await client.shutdown()
    }

    @Test func authenticatesAndSelectsTheDatabase() async throws {
        try await withPrivateRedis { redis in
            try await withClient(redis) { admin in
                let key = uniqueName("secret")
                try await admin.set(key, to: "db0")
                _ = try await admin.send(["ACL", "SETUSER", "app", "on", ">app-pass", "~*", "&*", "+@all"])
                _ = try await admin.send(["CONFIG", "SET", "requirepass", "p@ss word"])

                let url = "redis://:p%40ss%20word@\(redis.host):\(redis.port)/2"
                let client = RedisClient(configuration: try RedisConfiguration(url: url), logger: testLogger)
                #expect(try await client.get(key) == nil)  // database 2, not 0
                try await client.set(key, to: "db2")
                #expect(try await client.send(["CLIENT", "INFO"]).string?.contains(" db=2 ") == true)
                await client.shutdown()
                #expect(try await admin.get(key) == Array("db0".utf8))

                let user = RedisClient(
                    configuration: try RedisConfiguration(
                        url: "redis://app:app-pass@\(redis.host):\(redis.port)"),
                    logger: testLogger)
                #expect(try await user.send(["ACL", "WHOAMI"]).string == "app")
                await user.shutdown()

                let wrong = RedisClient(
                    configuration: try RedisConfiguration(url: "redis://:nope@\(redis.host):\(redis.port)"),
                    logger: testLogger)
                let error = try await #require(throws: RedisError.self) { try await wrong.send(["PING"]) }
                #expect(error.code == .serverError)
                #expect(error.serverMessage?.hasPrefix("WRONGPASS") == true)
                #expect(await wrong.isReachable() == false)
                await wrong.shutdown()
            }
        }
    }

    @Test func commandsAfterShutdownFailWithClosed() async throws {
        let redis = try await TestServers.redis()
        let client = RedisClient(configuration: try configuration(redis), logger: testLogger)
        #expect(await client.isReachable())
        await client.shutdown()
        await client.shutdown()
        let error = try await #require(throws: RedisError.self) { try await client.send(["PING"]) }
        #expect(error.code == .closed)
    }

    @Test func slowCommandTimesOut() async throws {
        let redis = try await TestServers.redis()
        var configuration = try configuration(redis, poolSize: 1)
        configuration.commandTimeout = .milliseconds(200)
        let client = RedisClient(configuration: configuration, logger: testLogger)
        let error = try await #require(throws: RedisError.self) {
            try await client.send(["BLPOP", RedisArgument(uniqueName("empty")), "1"])
        }
        #expect(error.code == .timeout)
        // The timed-out connection was discarded; a new one works.
        try await eventually("Redis to answer again") { await client.isReachable() }
        await client.shutdown()
    }
}
