import AviaryJSON
import Foundation
import Locking
import Synchronization
import TestSupport
import Testing

/// The seven services on a Redis Cluster (three masters, three replicas) and on a Sentinel-watched
/// master: a user's day works, and a master killed under load is replaced without losing an
/// acknowledged write.
@Suite(.serialized) struct RedisClusterSystemTests {
    @Test func theServicesWorkOnARedisCluster() async throws {
        let cluster = try await TestRedisGroup.launchCluster()
        let stack = try await ServiceStack.start(
            ServiceStack.allServices, redisDatabase: 0, instances: ["timeline": 2, "notifications": 2], redisURL: cluster.url)
        try await UserDay.run(on: stack)
    }

    @Test func theServicesWorkOnASentinelWatchedMaster() async throws {
        let group = try await TestRedisGroup.launchSentinel()
        let stack = try await ServiceStack.start(ServiceStack.allServices, redisDatabase: 0, redisURL: group.url)
        try await UserDay.run(on: stack)
    }

    /// Posts go on while a Redis master is killed: posts fail only while its replica takes over,
    /// and every acknowledged post reaches the follower's home timeline (its event was on a replica
    /// before the outbox let it go, `AVIARY_REDIS_REPLICA_ACKS`).
    @Test func aKilledMasterLosesNoAcknowledgedPost() async throws {
        let cluster = try await TestRedisGroup.launchCluster()
        let stack = try await ServiceStack.start(
            ["auth", "social-graph", "tweets", "timeline"], redisDatabase: 0, redisURL: cluster.url)
        let (author, reader) = (try await stack.makeUser("author"), try await stack.makeUser("reader"))
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": author.idValue], as: reader)
        let _: JSONValue = try await stack.call("timeline", "timeline.home", ["limit": 1], as: reader)  // built now

        let posted = Locked<[String]>([])
        let failed = Locked<[ContinuousClock.Instant]>([])
        let running = Atomic<Bool>(true)
        let poster = Task {
            var number = 0
            while running.load(ordering: .relaxed) {
                number += 1
                do {
                    let tweet: JSONValue = try await stack.call("tweets", "tweets.create", ["text": .string("post \(number)")], as: author)
                    if let id = tweet["id"]?.stringValue { posted.withLock { $0.append(id) } }
                } catch {
                    failed.withLock { $0.append(.now) }
                    try? await Task.sleep(for: .milliseconds(20))
                }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        try await Task.sleep(for: .seconds(1))
        try await cluster.waitUntilClusterIsOK()
        let victim = try await cluster.masters()[0]
        let killed = ContinuousClock.now
        try await cluster.kill(port: victim)
        let replaced = await eventually(timeout: .seconds(30), interval: .milliseconds(100)) {
            !((try? await cluster.masters()) ?? [victim]).contains(victim)
        }
        #expect(replaced)
        // Back as its successor's replica, as an operator would bring it: until then that master has
        // no replica to WAIT for, and the events of its slots stay in the outbox.
        try await cluster.start(port: victim)
        try await cluster.waitUntilClusterIsOK()
        try await Task.sleep(for: .seconds(2))
        running.store(false, ordering: .relaxed)
        await poster.value

        let failures = failed.withLock { $0 }
        let acknowledged = posted.withLock { $0 }
        let window = failures.last.map { killed.duration(to: $0) } ?? .zero
        print("redis master killed: \(acknowledged.count) posts acknowledged, \(failures.count) failed, the last \(window) after the kill")
        #expect(acknowledged.count > 50)
        #expect(window < .seconds(10))
        let missing = Locked<Set<String>>(Set(acknowledged))
        let arrived = await eventually(timeout: .seconds(30), interval: .milliseconds(200)) {
            var cursor: String?
            var seen: Set<String> = []
            repeat {
                var parameters: [String: JSONValue] = ["limit": 100]
                if let cursor { parameters["cursor"] = .string(cursor) }
                guard let page: JSONValue = try? await stack.call("timeline", "timeline.home", parameters, as: reader) else { return false }
                seen.formUnion(page["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [])
                cursor = page["nextCursor"]?.stringValue
            } while cursor != nil
            missing.withLock { $0 = Set(acknowledged).subtracting(seen) }
            return missing.withLock { $0.isEmpty }
        }
        #expect(arrived, "acknowledged posts missing from the home timeline: \(missing.withLock { $0 })")
    }
}
