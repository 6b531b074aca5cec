import AviaryAPI
import AviaryJSON
import EventStreams
import Logging
import Postgres
import RPC
import TestSupport
import Testing

@Suite("users' totals and relations held by each instance")
struct RecordTests {
    @Test("a follow and an unfollow show at once on the instance that took them and to the follower on another that holds both users, and soon to everyone there")
    func changesReachEveryCopy() async throws {
        let stack = try await GraphStack.shared()
        let extra = try await GraphStack.startInstance(stack.environment)
        defer { extra.kill() }
        let client = RPCClient(configuration: .init(addresses: [extra.rpcAddress]), logger: Logger(label: "graph-tests"))
        defer { Task { await client.shutdown() } }
        let (nina, omar) = (try await stack.makeUser("nina"), try await stack.makeUser("omar"))
        let params: [String: JSONValue] = ["ids": .ids([omar.id]), "viewerId": .id(nina.id)]
        func onExtra(_ params: [String: JSONValue] = params) async throws -> UserStatsResult {
            try await client.call(
                "graph.statsMany", params: params, meta: RequestMeta(service: stack.serviceCredential), as: [UserStatsResult].self)[0]
        }
        func here() async throws -> UserStatsResult {
            try await stack.callInternal("graph.statsMany", params, decoding: [UserStatsResult].self)[0]
        }
        func seen(followers: Int64, isFollowed: Bool, followsYou: Bool) -> UserStatsResult {
            UserStatsResult(
                userId: omar.id.description, followers: followers, following: followsYou ? 1 : 0, isFollowed: isFollowed,
                followsYou: followsYou)
        }
        // Until the extra instance answers from its own copy (its subscription is up by then).
        #expect(
            try await eventually {
                try await onExtra() == seen(followers: 0, isFollowed: false, followsYou: false)
                    && extra.metric(#"aviary_graph_local_follows_total{result="hit"}"#) > 0
            })
        #expect(try await here() == seen(followers: 0, isFollowed: false, followsYou: false))

        // While the outbox relays are held back, only the instance that took the follow knows of it;
        // the follower is shown it everywhere, skipping the other's copy (and refreshing it).
        try await holdingAdvisoryLock(OutboxRelay.lockKey(schema: "social_graph"), on: stack.database) {
            try await stack.follow(nina, omar)
            #expect(try await here() == seen(followers: 1, isFollowed: true, followsYou: false))
            #expect(try await onExtra(["ids": .ids([omar.id])]).followers == 0, "anyone else there, once it is announced")
            #expect(try await onExtra() == seen(followers: 1, isFollowed: true, followsYou: false))
        }
        // The relay announces it with the event: well inside the 10 s a held record would otherwise live.
        let soon = Duration.seconds(2)
        #expect(try await eventually(timeout: soon) { try await onExtra() == seen(followers: 1, isFollowed: true, followsYou: false) })
        try await stack.follow(omar, nina)
        #expect(try await here() == seen(followers: 1, isFollowed: true, followsYou: true))
        #expect(try await eventually(timeout: soon) { try await onExtra() == seen(followers: 1, isFollowed: true, followsYou: true) })
        try await stack.unfollow(nina, omar)
        #expect(try await here() == seen(followers: 0, isFollowed: false, followsYou: true))
        #expect(try await eventually(timeout: soon) { try await onExtra() == seen(followers: 0, isFollowed: false, followsYou: true) })
    }

    @Test("a viewer who follows more users than a record lists still sees whom they follow")
    func viewerFollowingMany() async throws {
        let stack = try await GraphStack.shared()
        let (viewer, followed, other) = (try await stack.makeUser("avid"), try await stack.makeUser("followed"), try await stack.makeUser("other"))
        // Edges to 150 users who are not in this test, ahead of the real one in the key's order,
        // with the counts a follow writes.
        try await stack.database.execute(
            "INSERT INTO social_graph.follows (follower_id, followee_id, created_at) SELECT $1, -g, now() FROM generate_series(1, 150) AS g",
            [viewer.id.value])
        try await stack.database.execute(
            """
            INSERT INTO social_graph.count_deltas (user_id, followers, following)
            SELECT -g, 1, 0 FROM generate_series(1, 150) AS g UNION ALL SELECT $1, 0, 150
            """, [viewer.id.value])
        try await stack.follow(viewer, followed)
        try await stack.follow(other, viewer)
        // Twice: the second read finds the records held.
        for _ in 0..<2 {
            let stats = try await stack.callInternal(
                "graph.statsMany", ["ids": .ids([followed.id, other.id]), "viewerId": .id(viewer.id)], decoding: [UserStatsResult].self)
            #expect(stats.map(\.isFollowed) == [true, false])
            #expect(stats.map(\.followsYou) == [false, true])
        }
    }
}
