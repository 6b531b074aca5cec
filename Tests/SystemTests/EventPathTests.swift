import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import TestSupport
import Testing

/// The paths between services that only events carry, end to end through the real executables:
/// no event written by hand.
@Suite struct EventPathTests {
    /// auth's `users/updated` event: tweets drops the bodies it cached with the old profile (in Redis
    /// and in every process's memory), so reads through tweets and timeline show the new name.
    @Test func aProfileChangeReachesCachedTweetsAndTimelines() async throws {
        let stack = try await ServiceStack.start(
            ["auth", "social-graph", "tweets", "timeline", "media"], redisDatabase: 1)
        let (ada, ben) = (try await stack.makeUser("ada"), try await stack.makeUser("ben"))
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": ada.idValue], as: ben)
        let tweet: JSONValue = try await stack.call("tweets", "tweets.create", ["text": "before the rename"], as: ada)
        let id = try #require(tweet["id"]?.stringValue)
        // Read once each way, so the body is cached with the old name.
        let first: JSONValue = try await stack.call("tweets", "tweets.get", ["tweetId": .string(id)], as: ben)
        #expect(first["author"]?["fullname"]?.stringValue == "Test ada")
        #expect(try await Self.homeAuthorName(of: id, for: ben, stack) == "Test ada")

        let _: JSONValue = try await stack.call("auth", "auth.updateProfile", ["fullname": "Ada Renamed"], as: ada)
        let renamed = try await eventually(timeout: .seconds(5)) {
            let got: JSONValue = try await stack.call("tweets", "tweets.get", ["tweetId": .string(id)], as: ben)
            return got["author"]?["fullname"]?.stringValue == "Ada Renamed"
        }
        #expect(renamed, "tweets.get shows the new name")
        #expect(try await Self.homeAuthorName(of: id, for: ben, stack) == "Ada Renamed")
    }

    /// messaging's `message.sent` event: notifications keeps a `message` notification for a member
    /// who has no live subscription, to read later.
    @Test func aMessageToAMemberWithoutASubscriptionIsANotification() async throws {
        let stack = try await ServiceStack.start(
            ["auth", "social-graph", "tweets", "messaging", "notifications", "media"], redisDatabase: 2)
        let (cam, dee) = (try await stack.makeUser("cam"), try await stack.makeUser("dee"))
        let conversation: JSONValue = try await stack.call(
            "messaging", "messaging.openDirect", ["userId": dee.idValue], as: cam)
        let conversationID = try #require(conversation["id"]?.stringValue)
        let _: JSONValue = try await stack.call(
            "messaging", "messaging.send", ["conversationId": .string(conversationID), "text": "are you there?"], as: cam)
        var found: JSONValue?
        let arrived = try await eventually(timeout: .seconds(5)) {
            let page: JSONValue = try await stack.call("notifications", "notifications.list", [:], as: dee)
            found = page["items"]?.arrayValue?.first { $0["type"] == "message" }
            return found != nil
        }
        #expect(arrived, "dee has a message notification")
        #expect(found?["conversationId"]?.stringValue == conversationID)
        #expect(found?["actor"]?["id"]?.stringValue == cam.id.description)
        // The sender is not notified of their own message.
        let own: JSONValue = try await stack.call("notifications", "notifications.list", [:], as: cam)
        #expect(own["items"]?.arrayValue?.contains { $0["type"] == "message" } == false)
    }

    /// The author's name on tweet `id` as `user`'s home timeline shows it.
    static func homeAuthorName(of id: String, for user: StackUser, _ stack: ServiceStack) async throws -> String? {
        let home: JSONValue = try await stack.call("timeline", "timeline.home", ["limit": 20], as: user)
        let item = home["items"]?.arrayValue?.first { $0["id"]?.stringValue == id }
        return item?["author"]?["fullname"]?.stringValue
    }
}
