import AviaryJSON
import Foundation
import Redis
import TestSupport
import Testing

/// notifications instances share the partitions of each topic (`AVIARY_NOTIFICATIONS_PARTITIONS`,
/// ``PartitionMembership``): each holds its share of the leases, every follow is notified exactly
/// once, and when one instance is killed the others take its partitions over.
@Suite struct NotificationPartitionsTests {
    static let topics = ["graph", "tweets", "messaging"]

    @Test func fourInstancesShareThePartitionsAndTakeOverAKilledOnesShare() async throws {
        let redis = try await TestServers.startPrivateRedis()
        let stack = try await ServiceStack.start(
            ["auth", "social-graph", "tweets", "notifications"], redisDatabase: 0,
            environment: ["AVIARY_NOTIFICATIONS_PARTITIONS": "4"], instances: ["notifications": 4], redisServer: redis)
        // 12 leases (4 partitions of 3 topics): 3 for each instance.
        let shared = try await eventually(timeout: .seconds(30), interval: .milliseconds(200)) {
            try await Self.leaseHolders(stack).values.sorted() == [3, 3, 3, 3]
        }
        let holders = try await Self.leaseHolders(stack)
        #expect(shared, "leases: \(holders)")

        let users = try await stack.makeUsers(21, "part")
        let follower = users[0]
        for followee in users.dropFirst(1).prefix(10) {
            let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": followee.idValue], as: follower)
        }
        try await Self.expectOneFollowNotification(stack, for: Array(users.dropFirst(1).prefix(10)))

        // One instance killed: after its membership and leases expire, three instances hold the 12.
        stack.process("notifications", instance: 0).kill()
        let takenOver = try await eventually(timeout: .seconds(30), interval: .milliseconds(200)) {
            let holders = try await Self.leaseHolders(stack)
            return holders.count == 3 && holders.values.reduce(0, +) == 12
        }
        let remaining = try await Self.leaseHolders(stack)
        #expect(takenOver, "leases: \(remaining)")
        for followee in users.dropFirst(11) {
            let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": followee.idValue], as: follower)
        }
        try await Self.expectOneFollowNotification(stack, for: Array(users.dropFirst(11)))
    }

    /// How many partition leases each holder has.
    static func leaseHolders(_ stack: ServiceStack) async throws -> [String: Int] {
        var holders: [String: Int] = [:]
        for topic in topics {
            for partition in 0..<4 {
                let key = "aviary:events:lease:notifications-p\(partition)-of-4:\(topic)"
                if let holder = try await stack.redis.send(["GET", RedisArgument(key)]).string { holders[holder, default: 0] += 1 }
            }
        }
        return holders
    }

    static func expectOneFollowNotification(_ stack: ServiceStack, for followees: [StackUser]) async throws {
        for followee in followees {
            var follows = 0
            let notified = try await eventually(timeout: .seconds(20), interval: .milliseconds(100)) {
                let page: JSONValue = try await stack.call("notifications", "notifications.list", [:], as: followee)
                follows = page["items"]?.arrayValue?.filter { $0["type"]?.stringValue == "follow" }.count ?? 0
                return follows >= 1
            }
            #expect(notified && follows == 1, "\(followee.username): \(follows) follow notifications")
        }
    }
}
