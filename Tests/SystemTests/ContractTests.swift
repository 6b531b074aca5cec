import AviaryAPI
import AviaryJSON
import EventStreams
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RPC
import Redis
import TestSupport
import Testing

/// The contract as the code states it holds for the running services: `docs/api.md` is what they
/// describe, and every event their statements write has the shape its ``EventKind`` names.
@Suite("the contract", .serialized)
struct ContractTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every service and a gateway, default settings, Redis database 4; started once.
    private static let stack = Task {
        try await ServiceStack.start(ServiceStack.allServices + ["gateway"], redisDatabase: 4)
    }

    @Test("docs/api.md is what the services describe")
    func theCommittedReferenceIsCurrent() async throws {
        let stack = try await Self.stack.value
        let (body, _) = try await URLSession.shared.data(from: URL(string: stack.gatewayURL() + "/rpc/discover")!)
        let document = try JSONDecoder().decode(JSONValue.self, from: body)
        #expect((document["methods"]?.arrayValue?.count ?? 0) > 40)
        let rendered = APIReference.markdown(of: document)
        let committed = try? String(contentsOf: Self.repository.appendingPathComponent("docs/api.md"), encoding: .utf8)
        if committed != rendered {
            let fresh = Self.repository.appendingPathComponent(".build/api.md")
            try rendered.write(to: fresh, atomically: true, encoding: .utf8)
            Issue.record("docs/api.md is not what the services describe: review and copy \(fresh.path) over it")
        }
    }

    @Test("each event the services' statements write decodes as its kind's payload")
    func eventsHaveTheirKindsShapes() async throws {
        let stack = try await Self.stack.value
        let (alice, bob) = (try await stack.makeUser("alice"), try await stack.makeUser("bob"))
        // graph: follow, mute and unmute (while following, so the unmute is an event too), unfollow.
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": .id(bob.id)], as: alice)
        let _: JSONValue = try await stack.call("social-graph", "graph.mute", ["userId": .id(bob.id)], as: alice)
        let _: JSONValue = try await stack.call("social-graph", "graph.unmute", ["userId": .id(bob.id)], as: alice)
        let _: JSONValue = try await stack.call("social-graph", "graph.unfollow", ["userId": .id(bob.id)], as: alice)
        // tweets: a tweet, a reply mentioning alice, a like and its taking back, a delete.
        let tweet: JSONValue = try await stack.call("tweets", "tweets.create", ["text": "first"], as: alice)
        let tweetID = try #require(tweet["id"])
        let _: JSONValue = try await stack.call(
            "tweets", "tweets.create", ["text": .string("@\(alice.username) yes"), "replyTo": tweetID], as: bob)
        let _: JSONValue = try await stack.call("tweets", "tweets.like", ["tweetId": tweetID], as: bob)
        let _: JSONValue = try await stack.call("tweets", "tweets.unlike", ["tweetId": tweetID], as: bob)
        let _: JSONValue = try await stack.call("tweets", "tweets.delete", ["tweetId": tweetID], as: alice)
        // messaging: a message to someone with no live subscription.
        let direct: JSONValue = try await stack.call("messaging", "messaging.openDirect", ["userId": .id(bob.id)], as: alice)
        let _: JSONValue = try await stack.call(
            "messaging", "messaging.send", ["conversationId": try #require(direct["id"]), "text": "hi"], as: alice)
        // users: a profile change; a suspension of bob's by an admin, and its lifting.
        let _: JSONValue = try await stack.call("auth", "auth.updateProfile", ["fullname": "Alice Renamed"], as: alice)
        #expect(try await stack.tool(["admin", "grant", alice.username]).status == 0)
        let _: JSONValue = try await stack.call("auth", "moderation.suspend", ["userId": .id(bob.id), "reason": "a test"], as: alice)
        let _: JSONValue = try await stack.call("auth", "moderation.unsuspend", ["userId": .id(bob.id)], as: alice)

        func events(of topic: String) async throws -> [DomainEvent] {
            let entries = try await stack.redis.send(["XRANGE", RedisArgument(EventStream.key(topic: topic)), "-", "+"]).array ?? []
            return try entries.compactMap { entry -> DomainEvent? in
                guard let fields = entry.array?.last?.array else { return nil }
                var values: [String: String] = [:]
                for index in stride(from: 0, to: fields.count - 1, by: 2) {
                    if let name = fields[index].string, let value = fields[index + 1].string { values[name] = value }
                }
                guard let type = values["type"], let payload = values["payload"] else { return nil }
                return DomainEvent(topic: topic, type: type, payload: try RawJSON(unchecked: Array(payload.utf8)).decode(JSONValue.self))
            }
        }
        /// The payloads of `kind` in its topic's stream, waiting for the relays to move them.
        func payloads<Payload>(_ kind: EventKind<Payload>) async throws -> [Payload] {
            var found: [Payload] = []
            _ = await eventually(timeout: .seconds(10)) {
                found = (try? await events(of: kind.topic).compactMap { try $0.payload(kind) }) ?? []
                return !found.isEmpty
            }
            // Once more, outside the wait, so that a payload of the wrong shape fails the test with its error.
            return try await events(of: kind.topic).compactMap { try $0.payload(kind) }
        }

        let follows = try await payloads(GraphTopic.followed)
        #expect(follows.contains { $0.followerId == alice.id && $0.followeeId == bob.id })
        #expect(try await payloads(GraphTopic.unfollowed).contains { $0.followerId == alice.id && $0.followeeId == bob.id })
        #expect(try await payloads(GraphTopic.muted).contains { $0.muterId == alice.id && $0.mutedId == bob.id })
        #expect(try await payloads(GraphTopic.unmuted).contains { $0.muterId == alice.id && $0.mutedId == bob.id })
        let created = try await payloads(TweetsTopic.created)
        #expect(created.contains { $0.authorId == bob.id && $0.replyToAuthorId == alice.id && $0.mentionIds == [alice.id] })
        #expect(try await payloads(TweetsTopic.liked).contains { $0.userId == bob.id && $0.authorId == alice.id })
        #expect(try await payloads(TweetsTopic.unliked).contains { $0.userId == bob.id })
        #expect(try await payloads(TweetsTopic.deleted).contains { $0.authorId == alice.id && $0.mentionIds.isEmpty })
        let sent = try await payloads(MessagingTopic.sent)
        #expect(sent.contains { $0.senderId == alice.id && $0.offlineRecipientIds == [bob.id] && $0.recipientIds == nil })
        #expect(try await payloads(UsersTopic.updated).contains { $0.userId == alice.id })
        #expect(try await payloads(UsersTopic.suspended).contains { $0.userId == bob.id })
        #expect(try await payloads(UsersTopic.reinstated).contains { $0.userId == bob.id })
    }
}
