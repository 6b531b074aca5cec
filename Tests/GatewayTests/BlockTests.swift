import AviaryJSON
import Foundation
import Postgres
import Testing
import TestSupport

/// Blocks end to end through the edge: what a block ends, refuses and hides, for both users, and
/// what its lifting gives back.
@Suite("Blocks", .serialized)
struct BlockTests {
    @Test("a block ends follows, refuses follows, likes, replies and messages, and hides tweets both ways")
    func blockBothWays() async throws {
        let edge = try await GatewayStack.shared()
        let (ana, ben, cat) = (try await edge.register("ana"), try await edge.register("ben"), try await edge.register("cat"))
        func call(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser) async throws -> JSONValue {
            try await EdgeHTTP.rpc(edge.url, method, params, token: user.token)
        }
        func result(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser) async throws -> JSONValue {
            let answer = try await call(method, params, as: user)
            return try #require(answer["result"], "\(method) answered \(answer)")
        }
        func reason(_ method: String, _ params: [String: JSONValue], as user: EdgeUser) async throws -> String? {
            try await call(method, params, as: user)["error"]?["data"]?["reason"]?.stringValue
        }
        func ids(_ page: JSONValue) -> [String] { page["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [] }

        let word = "blockword\(UInt32.random(in: 0...UInt32.max))"
        _ = try await result("graph.follow", ["userId": .string(ana.id)], as: ben)
        _ = try await result("graph.follow", ["userId": .string(ben.id)], as: ana)
        let tweet = try #require(try await result("tweets.create", ["text": .string("ana says \(word)")], as: ana)["id"])
        let direct = try #require(try await result("messaging.openDirect", ["userId": .string(ana.id)], as: ben)["id"])
        #expect(await eventually { (try? ids(await result("timeline.home", as: ben)).contains(tweet.stringValue ?? "")) == true })

        #expect(try await result("graph.block", ["userId": .string(ben.id)], as: ana)["blocking"] == true)
        #expect(try await result("graph.block", ["userId": .string(ben.id)], as: ana)["blocking"] == true)  // idempotent
        let seenByAna = try await result("graph.relationship", ["userId": .string(ben.id)], as: ana)
        #expect(seenByAna["blocking"] == true && seenByAna["blockedBy"] == false && seenByAna["isFollowed"] == false)
        #expect(try await result("graph.relationship", ["userId": .string(ana.id)], as: ben)["blockedBy"] == true)
        // Both follows ended; neither may follow again.
        #expect(try await ids(result("graph.following", ["userId": .string(ana.id)], as: cat)).isEmpty)
        #expect(try await ids(result("graph.following", ["userId": .string(ben.id)], as: cat)).isEmpty)
        #expect(try await reason("graph.follow", ["userId": .string(ana.id)], as: ben) == "forbidden")
        #expect(try await reason("graph.follow", ["userId": .string(ben.id)], as: ana) == "forbidden")
        // No like, reply or message across it, either way.
        #expect(try await reason("tweets.like", ["tweetId": tweet], as: ben) == "forbidden")
        #expect(try await reason("tweets.create", ["text": "a reply", "replyTo": tweet], as: ben) == "forbidden")
        #expect(try await reason("messaging.openDirect", ["userId": .string(ben.id)], as: ana) == "forbidden")
        #expect(try await reason("messaging.send", ["conversationId": direct, "text": "still there?"], as: ben) == "forbidden")
        // Ana's tweets are gone from ben's user timeline of her, his search and (once the unfollow's
        // event is applied) his home timeline; cat still sees them.
        #expect(try await ids(result("timeline.user", ["userId": .string(ana.id)], as: ben)).isEmpty)
        #expect(try await ids(result("timeline.user", ["userId": .string(ana.id)], as: cat)) == [tweet.stringValue!])
        #expect(try await ids(result("tweets.search", ["query": .string(word)], as: ben)).isEmpty)
        #expect(try await ids(result("tweets.search", ["query": .string(word)], as: cat)) == [tweet.stringValue!])
        #expect(await eventually { (try? ids(await result("timeline.home", as: ben)).contains(tweet.stringValue ?? "")) == false })
        // A mention across the block notifies nobody; cat's does.
        _ = try await result("tweets.create", ["text": .string("@\(ana.username) from ben")], as: ben)
        _ = try await result("tweets.create", ["text": .string("@\(ana.username) from cat")], as: cat)
        func mentioners() async throws -> [String] {
            try await result("notifications.list", as: ana)["items"]?.arrayValue?.filter { $0["type"] == "mention" }
                .compactMap { $0["actor"]?["id"]?.stringValue } ?? []
        }
        #expect(await eventually { (try? await mentioners()) == [cat.id] })
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await mentioners() == [cat.id])
        // The list is the blocker's own.
        #expect(try await ids(result("graph.blocks", as: ana)) == [ben.id])
        #expect(try await ids(result("graph.blocks", as: ben)).isEmpty)
        #expect(try await reason("graph.block", ["userId": .string(ana.id)], as: ana) == "validation")

        // Lifted: following works again; the ended follows stay ended.
        #expect(try await result("graph.unblock", ["userId": .string(ben.id)], as: ana)["blocking"] == false)
        #expect(try await ids(result("graph.following", ["userId": .string(ben.id)], as: cat)).isEmpty)
        #expect(try await result("graph.follow", ["userId": .string(ana.id)], as: ben)["following"] == true)
        #expect(try await result("tweets.like", ["tweetId": tweet], as: ben)["likedByMe"] == true)
        #expect(try await ids(result("tweets.search", ["query": .string(word)], as: ben)) == [tweet.stringValue!])
    }

    @Test("a follow that raced a block is ended when the block is looked at again; a lifted block's is not")
    func followRacingABlock() async throws {
        let edge = try await GatewayStack.shared()
        let (dee, eli, fay) = (try await edge.register("dee"), try await edge.register("eli"), try await edge.register("fay"))
        func result(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser) async throws -> JSONValue {
            let answer = try await EdgeHTTP.rpc(edge.url, method, params, token: user.token)
            return try #require(answer["result"], "\(method) answered \(answer)")
        }
        let database = edge.stack.database
        func follows(_ follower: EdgeUser, _ followee: EdgeUser) async throws -> Int64 {
            try await database.query(
                "SELECT count(*) FROM social_graph.follows WHERE follower_id = $1 AND followee_id = $2",
                [Int64(follower.id)!, Int64(followee.id)!])[0].decode(Int64.self, at: 0)
        }
        func due(_ blocker: EdgeUser, _ blocked: EdgeUser) async throws {
            try await database.execute(
                "UPDATE social_graph.block_rechecks SET due_at = now() WHERE blocker_id = $1 AND blocked_id = $2",
                [Int64(blocker.id)!, Int64(blocked.id)!])
        }
        _ = try await result("graph.block", ["userId": .string(eli.id)], as: dee)
        // What a follow statement that read no block, and committed after the block's, leaves.
        try await database.execute(
            """
            WITH edge AS (INSERT INTO social_graph.follows (follower_id, followee_id, created_at) VALUES ($1, $2, now()))
            INSERT INTO social_graph.count_deltas (user_id, followers, following) VALUES ($1, 0, 1), ($2, 1, 0)
            """, [Int64(eli.id)!, Int64(dee.id)!])
        #expect(try await follows(eli, dee) == 1)
        try await due(dee, eli)
        #expect(await eventually(timeout: .seconds(15)) { (try? await follows(eli, dee)) == 0 })
        #expect(await eventually { (try? await result("graph.stats", ["userId": .string(eli.id)], as: fay)["following"]) == 0 })

        // Lifted before its second look: the follow made since stays.
        _ = try await result("graph.block", ["userId": .string(fay.id)], as: dee)
        _ = try await result("graph.unblock", ["userId": .string(fay.id)], as: dee)
        _ = try await result("graph.follow", ["userId": .string(dee.id)], as: fay)
        try await due(dee, fay)
        #expect(await eventually(timeout: .seconds(15)) {
            let rows = try? await database.query(
                "SELECT count(*) FROM social_graph.block_rechecks WHERE blocker_id = $1", [Int64(dee.id)!])
            return (try? rows?[0].decode(Int64.self, at: 0)) == 0
        })
        #expect(try await follows(fay, dee) == 1)
    }
}
