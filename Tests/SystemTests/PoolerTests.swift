import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import TestSupport
import Testing

/// The seven services through PgBouncer in transaction mode (`AVIARY_POSTGRES_PREPARED=off`), on
/// fewer server connections than the services open: a user's day, end to end.
@Suite struct PoolerTests {
    @Test func theServicesWorkThroughPgBouncerInTransactionMode() async throws {
        let bouncer = try await TestPgBouncer.launch(in: try await TestServers.postgres(), serverConnections: 6)
        let stack = try await ServiceStack.start(
            ServiceStack.allServices, redisDatabase: 6, environment: ["AVIARY_POSTGRES_PREPARED": "off"],
            servicePostgresURL: bouncer.url(for:))
        let (ana, ben) = (try await stack.makeUser("ana"), try await stack.makeUser("ben"))
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": ana.idValue], as: ben)
        var posted: [String] = []
        for number in 1...5 {
            let tweet: JSONValue = try await stack.call("tweets", "tweets.create", ["text": .string("pooled \(number)")], as: ana)
            posted.append(try #require(tweet["id"]?.stringValue))
        }
        let _: JSONValue = try await stack.call("tweets", "tweets.like", ["tweetId": .string(posted[0])], as: ben)
        let home = try await eventually(timeout: .seconds(10)) {
            let page: JSONValue = try await stack.call("timeline", "timeline.home", ["limit": 20], as: ben)
            return page["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == posted.reversed()
        }
        #expect(home, "ben's home timeline shows ana's five tweets, newest first")
        let notified = try await eventually(timeout: .seconds(10)) {
            let page: JSONValue = try await stack.call("notifications", "notifications.list", [:], as: ana)
            let kinds = Set(page["items"]?.arrayValue?.compactMap { $0["type"]?.stringValue } ?? [])
            return kinds.isSuperset(of: ["follow", "like"])
        }
        #expect(notified, "ana is notified of ben's follow and like")
        let conversation: JSONValue = try await stack.call("messaging", "messaging.openDirect", ["userId": ben.idValue], as: ana)
        let conversationID = try #require(conversation["id"]?.stringValue)
        let _: JSONValue = try await stack.call(
            "messaging", "messaging.send", ["conversationId": .string(conversationID), "text": "through the pooler"], as: ana)
        let history: JSONValue = try await stack.call(
            "messaging", "messaging.history", ["conversationId": .string(conversationID)], as: ben)
        #expect(history["items"]?.arrayValue?.first?["text"] == "through the pooler", "\(history)")
        let profile: JSONValue = try await stack.call("auth", "auth.getUser", ["userId": ana.idValue], as: ben)
        #expect(profile["stats"]?["followers"] == 1 && profile["stats"]?["tweets"] == 5, "\(profile)")
    }
}
