import Locking
import Logging
import Redis
import TestSupport

let testLogger = Logger(label: "RedisTests")

/// A name no other test (or earlier run against the shared server) uses.
func uniqueName(_ prefix: String) -> String {
    "\(prefix):\(UInt64.random(in: 0...UInt64.max))"
}

func configuration(_ redis: TestRedis, poolSize: Int = 8) throws -> RedisConfiguration {
    var configuration = try RedisConfiguration(url: redis.url, poolSize: poolSize)
    configuration.connectTimeout = .seconds(2)
    return configuration
}

/// Runs `body` with a client and shuts the client down afterwards, also when `body` throws.
func withClient<T>(
    _ redis: TestRedis, poolSize: Int = 8, _ body: (RedisClient) async throws -> T
) async throws -> T {
    let client = RedisClient(configuration: try configuration(redis, poolSize: poolSize), logger: testLogger)
    do {
        let result = try await body(client)
        await client.shutdown()
        return result
    } catch {
        await client.shutdown()
        throw error
    }
}

/// Runs `body` with a client and a subscriber, shutting both down afterwards.
func withPubSub<T>(
    _ redis: TestRedis, _ body: (RedisClient, RedisSubscriber) async throws -> T
) async throws -> T {
    let subscriber = RedisSubscriber(configuration: try configuration(redis), logger: testLogger)
    do {
        let result = try await withClient(redis) { client in try await body(client, subscriber) }
        await subscriber.shutdown()
        return result
    } catch {
        await subscriber.shutdown()
        throw error
    }
}

struct TimedOut: Error, CustomStringConvertible {
    var description: String
}

/// Polls `condition` every 10 ms until it holds, failing after `timeout`.
func eventually(
    _ what: String, timeout: Duration = .seconds(10), _ condition: () async throws -> Bool
) async throws {
    guard try await TestSupport.eventually(timeout: timeout, interval: .milliseconds(10), condition) else {
        throw TimedOut(description: "timed out waiting for \(what)")
    }
}

/// Collects what an async sequence yields on a background task, so tests can wait with a timeout.
final class Collector<Element: Sendable>: Sendable {
    private let items = Locked<[Element]>([])
    private let finished = Locked(false)
    private let task = Locked<Task<Void, Never>?>(nil)

    init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element, S.Failure == Never {
        let started = Task { [self] in
            for await item in sequence {
                items.withLock { $0.append(item) }
            }
            finished.withLock { $0 = true }
        }
        task.withLock { $0 = started }
    }

    var collected: [Element] {
        items.withLock { $0 }
    }

    var isFinished: Bool {
        finished.withLock { $0 }
    }

    /// Waits until at least `count` items arrived and returns them all.
    @discardableResult
    func wait(for count: Int, timeout: Duration = .seconds(10)) async throws -> [Element] {
        try await eventually("\(count) items (have \(collected.count))", timeout: timeout) {
            collected.count >= count
        }
        return collected
    }

    /// Cancels the consuming task (which ends a subscription).
    func cancel() {
        task.withLock { $0?.cancel() }
    }
}

/// `PUBSUB NUMSUB channel`: how many connections subscribe to `channel`.
func subscriberCount(_ client: RedisClient, _ channel: String) async throws -> Int {
    try await client.send(["PUBSUB", "NUMSUB", RedisArgument(channel)]).array?[1].int ?? -1
}

extension RedisMessage {
    var text: String {
        String(decoding: payload, as: UTF8.self)
    }
}

/// Runs `body` with a Redis server of its own (for tests that stop it), stopping it afterwards.
func withPrivateRedis<T>(_ body: (TestRedis) async throws -> T) async throws -> T {
    let redis = try await TestServers.startPrivateRedis()
    do {
        let result = try await body(redis)
        try await redis.stop()
        return result
    } catch {
        try? await redis.stop()
        throw error
    }
}
