import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import TestSupport
import Testing

/// A page of users as the lists answer it.
struct UserPage: Decodable {
    var items: [User]
    var nextCursor: String?
}

@Suite("lists, relationships, counts and suggestions")
struct ListTests {
    @Test("followers pages give every follower once, newest first, while follows change between pages")
    func followersPaging() async throws {
        let stack = try await GraphStack.shared()
        let star = try await stack.makeUser("star")
        let fans = try await stack.makeUsers(45, "fan")
        for fan in fans { try await stack.follow(fan, star) }
        let newestFirst = fans.reversed().map(\.id)
        let removedUnseen = newestFirst[30]

        var seen: [EntityID] = []
        var cursor: String?
        var pages = 0
        repeat {
            var params: [String: JSONValue] = ["userId": .id(star.id), "limit": 7]
            if let cursor { params["cursor"] = .string(cursor) }
            let page = try await stack.call("graph.followers", params, as: star, decoding: UserPage.self)
            #expect(page.items.count <= 7)
            for user in page.items {
                #expect(user.followsYou, "\(user.id) follows the viewer")
                #expect(!user.isFollowed)
                #expect(user.stats.following == 1)
            }
            seen += page.items.map(\.id)
            cursor = page.nextCursor
            pages += 1
            if pages == 2 {
                // Newer follows land before the cursor; an unfollow after it must not leave a hole elsewhere.
                for late in try await stack.makeUsers(3, "late") { try await stack.follow(late, star) }
                try await stack.unfollow(fans.first { $0.id == removedUnseen }!, star)
            }
        } while cursor != nil
        #expect(seen == newestFirst.filter { $0 != removedUnseen })
        #expect(Set(seen).count == seen.count)
        // One auth.getUsers call per page, whatever the page size.
        #expect(stack.auth.profileCalls(viewer: star.id) == pages)
    }

    @Test("following pages and the internal id pages agree, newest first")
    func followingPaging() async throws {
        let stack = try await GraphStack.shared()
        let reader = try await stack.makeUser("reader")
        let authors = try await stack.makeUsers(23, "author")
        for author in authors { try await stack.follow(reader, author) }
        let newestFirst = authors.reversed().map(\.id.description)

        var listed: [String] = []
        var cursor: String?
        repeat {
            var params: [String: JSONValue] = ["userId": .id(reader.id), "limit": 4]
            if let cursor { params["cursor"] = .string(cursor) }
            let page = try await stack.call("graph.following", params, decoding: UserPage.self)
            listed += page.items.map(\.id.description)
            #expect(page.items.allSatisfy { !$0.isFollowed && !$0.followsYou && !$0.isCurrentUser }, "anonymous viewer")
            cursor = page.nextCursor
        } while cursor != nil
        #expect(listed == newestFirst)

        var ids: [String] = []
        cursor = nil
        repeat {
            var params: [String: JSONValue] = ["userId": .id(reader.id), "limit": 5]
            if let cursor { params["cursor"] = .string(cursor) }
            let page = try await stack.callInternal("graph.followingIds", params, decoding: IDPage.self)
            ids += page.items
            cursor = page.nextCursor
        } while cursor != nil
        #expect(ids == newestFirst)

        let whole = try await stack.callInternal("graph.followingIds", ["userId": .id(reader.id)], decoding: IDPage.self)
        #expect(whole.items == newestFirst)
        #expect(whole.nextCursor == nil)
    }

    @Test("follower id pages cover every follower exactly once")
    func followerIDPaging() async throws {
        let stack = try await GraphStack.shared()
        let star = try await stack.makeUser("idstar")
        let fans = try await stack.makeUsers(31, "idfan")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for fan in fans { group.addTask { try await stack.follow(fan, star) } }
            try await group.waitForAll()
        }
        var ids: [String] = []
        var cursor: String?
        repeat {
            var params: [String: JSONValue] = ["userId": .id(star.id), "limit": 6]
            if let cursor { params["cursor"] = .string(cursor) }
            let page = try await stack.callInternal("graph.followerIds", params, decoding: IDPage.self)
            #expect(page.items.count <= 6)
            ids += page.items
            cursor = page.nextCursor
        } while cursor != nil
        #expect(ids.count == fans.count)
        #expect(Set(ids) == Set(fans.map(\.id.description)))
        let all = try await stack.callInternal("graph.followerIds", ["userId": .id(star.id)], decoding: IDPage.self)
        #expect(all.items == ids)
        let empty = try await stack.callInternal("graph.followerIds", ["userId": .id(fans[0].id)], decoding: IDPage.self)
        #expect(empty.items.isEmpty && empty.nextCursor == nil)
    }

    @Test("relationship, stats and their batch versions")
    func relationshipsAndStats() async throws {
        let stack = try await GraphStack.shared()
        let (hana, ivan, jo) = (try await stack.makeUser("hana"), try await stack.makeUser("ivan"), try await stack.makeUser("jo"))
        try await stack.follow(hana, ivan)
        try await stack.follow(jo, hana)

        let fromHana = try await stack.call("graph.relationship", ["userId": .id(ivan.id)], as: hana, decoding: Relationship.self)
        #expect(fromHana == Relationship(isFollowed: true, followsYou: false))
        let fromIvan = try await stack.call("graph.relationship", ["userId": .id(hana.id)], as: ivan, decoding: Relationship.self)
        #expect(fromIvan == Relationship(isFollowed: false, followsYou: true))
        let toSelf = try await stack.call("graph.relationship", ["userId": .id(hana.id)], as: hana, decoding: Relationship.self)
        #expect(toSelf == Relationship(isFollowed: false, followsYou: false))
        let anonymous = await rpcError {
            _ = try await stack.call("graph.relationship", ["userId": .id(ivan.id)], decoding: Relationship.self)
        }
        #expect(anonymous?.code == -32001)

        // Anonymous access to stats.
        #expect(try await stack.call("graph.stats", ["userId": .id(hana.id)], decoding: StatsResult.self) == StatsResult(followers: 1, following: 1))
        #expect(try await stack.call("graph.stats", ["userId": .id(ivan.id)], decoding: StatsResult.self) == StatsResult(followers: 1, following: 0))
        let quiet = try await stack.makeUser("quiet")
        #expect(try await stack.call("graph.stats", ["userId": .id(quiet.id)], decoding: StatsResult.self) == StatsResult(followers: 0, following: 0))

        let nobody = stack.unknownID()
        let batch: [EntityID] = [ivan.id, nobody, hana.id, ivan.id]
        let stats = try await stack.callInternal("graph.statsMany", ["ids": .ids(batch)], decoding: [UserStatsResult].self)
        #expect(stats == [
            UserStatsResult(userId: ivan.id.description, followers: 1, following: 0),
            UserStatsResult(userId: nobody.description, followers: 0, following: 0),
            UserStatsResult(userId: hana.id.description, followers: 1, following: 1),
            UserStatsResult(userId: ivan.id.description, followers: 1, following: 0),
        ])
        let relations = try await stack.callInternal(
            "graph.relationships", ["viewerId": .id(hana.id), "ids": .ids([jo.id, ivan.id, nobody, hana.id])],
            decoding: [RelationResult].self)
        #expect(relations == [
            RelationResult(userId: jo.id.description, isFollowed: false, followsYou: true),
            RelationResult(userId: ivan.id.description, isFollowed: true, followsYou: false),
            RelationResult(userId: nobody.description, isFollowed: false, followsYou: false),
            RelationResult(userId: hana.id.description, isFollowed: false, followsYou: false),
        ])
        // With viewerId, statsMany gives the relations too (a profile read's one call), the same as above.
        let both = try await stack.callInternal(
            "graph.statsMany", ["ids": .ids([jo.id, ivan.id, nobody, hana.id]), "viewerId": .id(hana.id)],
            decoding: [UserStatsResult].self)
        #expect(both.map { RelationResult(userId: $0.userId, isFollowed: $0.isFollowed ?? true, followsYou: $0.followsYou ?? true) } == relations)
        #expect(both[1] == UserStatsResult(userId: ivan.id.description, followers: 1, following: 0, isFollowed: true, followsYou: false))
        let onlySelf = try await stack.callInternal(
            "graph.statsMany", ["ids": .ids([hana.id]), "viewerId": .id(hana.id)], decoding: [UserStatsResult].self)
        #expect(onlySelf == [UserStatsResult(userId: hana.id.description, followers: 1, following: 1, isFollowed: false, followsYou: false)])
        let badViewer = await rpcError {
            _ = try await stack.callInternal("graph.statsMany", ["ids": .ids([hana.id]), "viewerId": "me"], decoding: [UserStatsResult].self)
        }
        #expect(badViewer?.field == "viewerId")
        #expect(try await stack.callInternal("graph.statsMany", ["ids": []], decoding: [UserStatsResult].self).isEmpty)
    }

    @Test("suggestions are friends of friends not yet followed, most mutual connections first")
    func suggestions() async throws {
        let stack = try await GraphStack.shared()
        let users = try await stack.makeUsers(7, "sugg")
        let (me, b, c, d, e, f, g) = (users[0], users[1], users[2], users[3], users[4], users[5], users[6])
        for (from, to) in [(me, b), (me, c), (me, f), (b, d), (b, e), (b, me), (c, d), (c, f), (c, e), (f, g), (d, g)] {
            try await stack.follow(from, to)
        }
        let suggested = try await stack.call("graph.suggestions", [:], as: me, decoding: [User].self)
        // d and e: 2 mutual each (ties by id), g: 1; never me, b, c or f.
        #expect(suggested.map(\.id) == [d.id, e.id, g.id])
        #expect(suggested.allSatisfy { !$0.isFollowed })
        let limited = try await stack.call("graph.suggestions", ["limit": 1], as: me, decoding: [User].self)
        #expect(limited.map(\.id) == [d.id])
        let none = try await stack.call("graph.suggestions", [:], as: g, decoding: [User].self)
        #expect(none.isEmpty)
    }

    /// However many accounts someone follows, suggestions look at the 500 most recent follows of
    /// each account the caller follows, so one request stays cheap: an older follow of theirs is
    /// not counted.
    @Test("suggestions count each followed account's 500 most recent follows")
    func suggestionsLookAtRecentFollows() async throws {
        let stack = try await GraphStack.shared()
        let users = try await stack.makeUsers(4, "sample")
        let (me, busy, old, recent) = (users[0], users[1], users[2], users[3])
        try await stack.follow(me, busy)
        // busy followed `old` a day ago, then 499 accounts an hour ago, then `recent`.
        // With the counts the follows change, as graph.follow keeps them.
        try await stack.database.execute(
            """
            WITH made AS (
                INSERT INTO social_graph.follows (follower_id, followee_id, created_at)
                SELECT $1, followee, at FROM (
                    SELECT $2::bigint AS followee, now() - interval '1 day' AS at
                    UNION ALL SELECT $3::bigint + n, now() - interval '1 hour' FROM generate_series(1, 499) AS n
                    UNION ALL SELECT $4::bigint, now()
                ) AS edges
                RETURNING followee_id
            )
            INSERT INTO social_graph.count_deltas (user_id, followers, following)
            SELECT followee_id, 1, 0 FROM made UNION ALL SELECT $1, 0, count(*) FROM made
            """, [busy.id.value, old.id.value, (Int64(1) << 60) + (Int64.random(in: 0..<(1 << 30)) << 10), recent.id.value])
        let suggested = try await stack.call("graph.suggestions", [:], as: me, decoding: [User].self)
        #expect(suggested.map(\.id) == [recent.id])
    }
}
