import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import TestSupport
import Testing

/// The `graph` events of the edge `follower → followee` since `since`, oldest first.
func edgeEvents(_ stack: GraphStack, since: Date, follower: EntityID, followee: EntityID) async throws -> [GraphEvent] {
    try await stack.events(since: since).filter {
        $0.followerId == follower.description && $0.followeeId == followee.description
    }
}

@Suite("graph.follow and graph.unfollow")
struct FollowTests {
    @Test("follow and unfollow are idempotent and record one event per change")
    func idempotentWithEvents() async throws {
        let stack = try await GraphStack.shared()
        let since = Date()
        let (alice, bob) = (try await stack.makeUser("alice"), try await stack.makeUser("bob"))

        #expect(try await stack.follow(alice, bob) == true)
        #expect(try await stack.follow(alice, bob) == true)
        #expect(try await stack.storedCounts(bob.id) == StatsResult(followers: 1, following: 0))
        #expect(try await stack.storedCounts(alice.id) == StatsResult(followers: 0, following: 1))
        var events = try await edgeEvents(stack, since: since, follower: alice.id, followee: bob.id)
        #expect(events.map(\.type) == ["follow"])
        #expect(RFC3339.parse(events[0].at) != nil)
        #expect(events[0].at.hasSuffix("Z"))

        #expect(try await stack.unfollow(alice, bob) == false)
        #expect(try await stack.unfollow(alice, bob) == false)
        #expect(try await stack.storedCounts(bob.id) == StatsResult(followers: 0, following: 0))
        #expect(try await stack.storedCounts(alice.id) == StatsResult(followers: 0, following: 0))
        events = try await edgeEvents(stack, since: since, follower: alice.id, followee: bob.id)
        #expect(events.map(\.type) == ["follow", "unfollow"])
        let edges = try await stack.database.query(
            "SELECT count(*) FROM social_graph.follows WHERE follower_id = $1", [alice.id.value])
        #expect(try edges[0].decode(Int64.self, at: 0) == 0)
    }

    @Test("the event is in the outbox in the same transaction as the edge, its payload naming both users as id strings")
    func eventPayload() async throws {
        let stack = try await GraphStack.shared()
        let (carol, dave) = (try await stack.makeUser("carol"), try await stack.makeUser("dave"))
        let since = Date()
        try await stack.follow(carol, dave)
        let events = try await edgeEvents(stack, since: since, follower: carol.id, followee: dave.id)
        #expect(events.map(\.type) == ["follow"])
        let at = try #require(RFC3339.parse(events[0].at))
        #expect(abs(at.timeIntervalSinceNow) < 60)
        #expect(events[0].at.count == "2026-11-21T22:35:00.123Z".count)
        // The edge's own time is the event's.
        let rows = try await stack.database.query(
            "SELECT created_at FROM social_graph.follows WHERE follower_id = $1 AND followee_id = $2", [carol.id.value, dave.id.value])
        let created = try rows[0].decode(Date.self, at: 0)
        #expect(RFC3339.format(created) == events[0].at)
    }

    @Test("following or unfollowing oneself is a validation error naming userId")
    func selfFollow() async throws {
        let stack = try await GraphStack.shared()
        let erin = try await stack.makeUser("erin")
        for method in ["graph.follow", "graph.unfollow"] {
            let error = await rpcError {
                _ = try await stack.call(method, ["userId": .id(erin.id)], as: erin, decoding: FollowResult.self)
            }
            #expect(error?.code == -32022, "\(method)")
            #expect(error?.field == "userId", "\(method)")
        }
        #expect(try await stack.storedCounts(erin.id) == nil)
    }

    @Test("an unknown user is not_found for follow, unfollow, relationship, stats and lists")
    func unknownUser() async throws {
        let stack = try await GraphStack.shared()
        let frank = try await stack.makeUser("frank")
        let nobody = stack.unknownID()
        for method in ["graph.follow", "graph.unfollow", "graph.relationship"] {
            let error = await rpcError {
                _ = try await stack.call(method, ["userId": .id(nobody)], as: frank, decoding: JSONValue.self)
            }
            #expect(error?.code == -32004, "\(method)")
            #expect(error?.reason == "not_found", "\(method)")
        }
        let stats = await rpcError { _ = try await stack.call("graph.stats", ["userId": .id(nobody)], decoding: StatsResult.self) }
        #expect(stats?.code == -32004)
        let list = await rpcError { _ = try await stack.call("graph.followers", ["userId": .id(nobody)], decoding: JSONValue.self) }
        #expect(list?.code == -32004)
        #expect(try await stack.storedCounts(frank.id) == nil)
        #expect(try await stack.storedCounts(nobody) == nil)
    }

    @Test("malformed ids, limits and cursors are validation errors naming the field")
    func malformedParams() async throws {
        let stack = try await GraphStack.shared()
        let gina = try await stack.makeUser("gina")
        let badIDs: [JSONValue] = ["abc", "", "0", "-5", "12345678901234567890", "1.5", " 42", .int(42), .null, .bool(true)]
        for bad in badIDs {
            let error = await rpcError {
                _ = try await stack.call("graph.follow", ["userId": bad], as: gina, decoding: FollowResult.self)
            }
            #expect(error?.code == -32022, "userId \(bad)")
            #expect(error?.field == "userId", "userId \(bad)")
        }
        // Missing or of the wrong JSON type: invalid params, naming the parameter.
        let missing = await rpcError { _ = try await stack.call("graph.follow", [:], as: gina, decoding: FollowResult.self) }
        #expect(missing?.code == -32602)
        #expect(missing?.field == "userId")
        let wrongType = await rpcError {
            _ = try await stack.call("graph.followers", ["userId": .id(gina.id), "cursor": 5], decoding: JSONValue.self)
        }
        #expect(wrongType?.code == -32602)
        #expect(wrongType?.field == "cursor")

        for limit: JSONValue in [0, 101, "ten", -1] {
            let error = await rpcError {
                _ = try await stack.call("graph.followers", ["userId": .id(gina.id), "limit": limit], decoding: JSONValue.self)
            }
            #expect(error?.code == -32022, "limit \(limit)")
            #expect(error?.field == "limit", "limit \(limit)")
        }
        // Not base64, "not:a cursor", too long, then well-formed ones this service never makes:
        // a time past the timestamp range, one before 1970, and user id 0.
        let cursors: [JSONValue] = [
            "not a cursor", "bm90OmEgY3Vyc29y", .string(String(repeating: "A", count: 200)),
            "OTIyMzM3MjAzNjg1NDc3NTgwNzox", "LTE6MQ", "MTc2Mzc3MDAwMDAwMDAwMDow",
        ]
        for cursor in cursors {
            let error = await rpcError {
                _ = try await stack.call("graph.following", ["userId": .id(gina.id), "cursor": cursor], decoding: JSONValue.self)
            }
            #expect(error?.code == -32022, "cursor \(cursor)")
            #expect(error?.field == "cursor", "cursor \(cursor)")
        }
        let idLimit = await rpcError {
            _ = try await stack.callInternal("graph.followerIds", ["userId": .id(gina.id), "limit": 5001], decoding: IDPage.self)
        }
        #expect(idLimit?.field == "limit")

        let badElement = await rpcError {
            _ = try await stack.callInternal("graph.statsMany", ["ids": [.id(gina.id), "x1"]], decoding: [UserStatsResult].self)
        }
        #expect(badElement?.code == -32022)
        #expect(badElement?.field == "ids[1]")
        let tooMany = await rpcError {
            let ids = (1...1001).map { JSONValue.string(String($0)) }
            _ = try await stack.callInternal("graph.statsMany", ["ids": .array(ids)], decoding: [UserStatsResult].self)
        }
        #expect(tooMany?.code == -32022)
        #expect(tooMany?.field == "ids")
        let tooManyRelations = await rpcError {
            let ids = (1...1001).map { JSONValue.string(String($0)) }
            _ = try await stack.callInternal(
                "graph.relationships", ["viewerId": .id(gina.id), "ids": .array(ids)], decoding: [RelationResult].self)
        }
        #expect(tooManyRelations?.field == "ids")
        let badViewer = await rpcError {
            _ = try await stack.callInternal("graph.relationships", ["viewerId": "me", "ids": []], decoding: [RelationResult].self)
        }
        #expect(badViewer?.field == "viewerId")
    }
}
