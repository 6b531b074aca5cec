import AviaryAPI
import Foundation
import Postgres
import RPC
import TestSupport
import Testing

/// Users whose stored totals (counts rows plus deltas not folded in yet) differ from the edges, or
/// who have edges but no totals; the whole check is one statement, so it sees one snapshot even
/// while other tests write and the compactor folds.
func countMismatches(_ stack: GraphStack) async throws -> Int64 {
    let rows = try await stack.database.query(
        """
        WITH stored AS (
            SELECT user_id, sum(followers) AS followers, sum(following) AS following FROM (
                SELECT user_id, followers, following FROM social_graph.counts
                UNION ALL
                SELECT user_id, followers, following FROM social_graph.count_deltas
            ) AS parts GROUP BY user_id
        ), truth AS (
            SELECT user_id, sum(followers) AS followers, sum(following) AS following FROM (
                SELECT followee_id AS user_id, 1 AS followers, 0 AS following FROM social_graph.follows
                UNION ALL
                SELECT follower_id, 0, 1 FROM social_graph.follows
            ) AS sides GROUP BY user_id
        )
        SELECT count(*) FROM stored AS c
        FULL JOIN truth AS t ON t.user_id = c.user_id
        WHERE coalesce(c.followers, 0) <> coalesce(t.followers, 0) OR coalesce(c.following, 0) <> coalesce(t.following, 0)
        """)
    return try rows[0].decode(Int64.self, at: 0)
}

@Suite("concurrent follow and unfollow")
struct StormTests {
    @Test("32 tasks following and unfollowing the same and different edges leave counts equal to the edges", .timeLimit(.minutes(3)))
    func storm() async throws {
        let stack = try await GraphStack.shared()
        let since = Date()
        let users = try await stack.makeUsers(8, "storm")
        // Half the tasks fight over three hot edges (two of them opposite directions of one pair,
        // the pattern that deadlocks with unordered row locks); the rest spread over every edge.
        let hot = [(0, 1), (1, 0), (2, 1)]
        let failures = SharedCounter()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<32 {
                group.addTask {
                    for step in 0..<40 {
                        let (from, to): (Int, Int)
                        if task < 16 {
                            (from, to) = hot[(task + step) % hot.count]
                        } else {
                            let a = Int.random(in: 0..<8)
                            (from, to) = (a, (a + Int.random(in: 1..<8)) % 8)
                        }
                        do {
                            if Bool.random() {
                                #expect(try await stack.follow(users[from], users[to]) == true)
                            } else {
                                #expect(try await stack.unfollow(users[from], users[to]) == false)
                            }
                        } catch {
                            _ = failures.next()
                            Issue.record("call failed: \(error)")
                        }
                    }
                }
            }
        }
        #expect(failures.current == 0)

        let ids = users.map(\.id.value)
        let truth = try await stack.database.query(
            """
            SELECT u,
                   (SELECT count(*) FROM social_graph.follows WHERE followee_id = u),
                   (SELECT count(*) FROM social_graph.follows WHERE follower_id = u)
            FROM unnest($1::bigint[]) AS u
            """, [ids])
        let stats = try await stack.callInternal("graph.statsMany", ["ids": .ids(users.map(\.id))], decoding: [UserStatsResult].self)
        for (index, row) in truth.enumerated() {
            let expected = StatsResult(followers: try row.decode(Int64.self, at: 1), following: try row.decode(Int64.self, at: 2))
            #expect(try await stack.storedCounts(users[index].id) ?? StatsResult(followers: 0, following: 0) == expected)
            #expect(StatsResult(followers: stats[index].followers, following: stats[index].following) == expected)
        }
        #expect(try await countMismatches(stack) == 0)
        // The compactor folds the storm's deltas into the counts rows, and they still agree.
        #expect(try await eventually(timeout: .seconds(20)) {
            try await stack.database.query("SELECT count(*) FROM social_graph.count_deltas WHERE user_id = ANY($1)", [ids])[0]
                .decode(Int64.self, at: 0) == 0
        })
        #expect(try await countMismatches(stack) == 0)

        // Per edge, the events alternate follow, unfollow, follow… and end on the edge's state.
        let edges = Set(
            try await stack.database.query(
                "SELECT follower_id, followee_id FROM social_graph.follows WHERE follower_id = ANY($1)", [ids]
            ).map { "\(try $0.decode(Int64.self, at: 0))>\(try $0.decode(Int64.self, at: 1))" })
        let userIDs = Set(ids.map(String.init))
        var history: [String: [String]] = [:]
        for event in try await stack.events(since: since) where userIDs.contains(event.followerId) {
            history["\(event.followerId)>\(event.followeeId)", default: []].append(event.type)
        }
        for (edge, types) in history {
            let alternating = types.enumerated().allSatisfy { $0.element == ($0.offset % 2 == 0 ? "follow" : "unfollow") }
            #expect(alternating, "events of \(edge): \(types)")
            #expect((types.last == "follow") == edges.contains(edge), "events of \(edge) end on its state")
        }
        #expect(edges.allSatisfy { history[$0] != nil })
    }
}
