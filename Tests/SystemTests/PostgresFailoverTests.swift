import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import TestSupport
import Testing

/// A Postgres failover as a deployment sees one: the primary stops, its streaming replica is
/// promoted, and the services, given both in libpq's multi-host URL with
/// `target_session_attrs=read-write`, find the new primary by themselves, without a restart.
@Suite struct PostgresFailoverTests {
    @Test func servicesFollowAPromotedReplicaWithoutARestart() async throws {
        let primary = try await TestServers.startPrivatePostgres()
        let replica = try await primary.makeReplica()
        let stack = try await ServiceStack.start(
            ["auth", "social-graph", "tweets"], redisDatabase: 7, postgresServer: primary,
            servicePostgresURL: { url in
                let database = url.split(separator: "/").last ?? ""
                return "postgres://aviary@\(primary.host):\(primary.port),\(replica.host):\(replica.port)/\(database)"
                    + "?target_session_attrs=read-write"
            })
        let ana = try await stack.makeUser("ana")
        var acknowledged: [String] = []
        for number in 1...20 {
            let tweet: JSONValue = try await stack.call("tweets", "tweets.create", ["text": .string("before \(number)")], as: ana)
            acknowledged.append(try #require(tweet["id"]?.stringValue))
        }

        // A fast shutdown sends the replica everything written before it; then the failover.
        let stopped = ContinuousClock.now
        try await primary.stop()
        try await replica.promote()
        var firstWrite: Duration?
        var failures = 0
        while firstWrite == nil, ContinuousClock.now - stopped < .seconds(30) {
            do {
                let tweet: JSONValue = try await stack.call("tweets", "tweets.create", ["text": "after the failover"], as: ana)
                acknowledged.append(try #require(tweet["id"]?.stringValue))
                firstWrite = ContinuousClock.now - stopped
            } catch let error as RPCError where error.reason == "unavailable" || error.reason == "timeout" {
                failures += 1
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        let window = try #require(firstWrite, "no post was accepted within 30 s of the primary's stop")
        print("Postgres failover: the first post accepted \(window) after the primary stopped (\(failures) refused meanwhile)")
        #expect(window < .seconds(15))

        // Writes and reads go on, against the promoted replica, and nothing acknowledged is missing.
        for number in 1...5 {
            let tweet: JSONValue = try await stack.call("tweets", "tweets.create", ["text": .string("after \(number)")], as: ana)
            acknowledged.append(try #require(tweet["id"]?.stringValue))
        }
        for id in acknowledged {
            let tweet: JSONValue = try await stack.call("tweets", "tweets.get", ["tweetId": .string(id)], as: ana)
            #expect(tweet["id"]?.stringValue == id)
        }
        let profile: JSONValue = try await stack.call("auth", "auth.getUser", ["userId": ana.idValue], as: ana)
        #expect(profile["stats"]?["tweets"]?.intValue == Int64(acknowledged.count), "\(profile)")
    }
}
