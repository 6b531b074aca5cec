import AviaryAPI
import Postgres

/// A user's follower and following totals.
struct FollowTotals: Sendable, Hashable {
    var followers: Int64
    var following: Int64

    static let zero = FollowTotals(followers: 0, following: 0)
}

/// A user's totals, and their relation to a viewer (false without one).
struct FollowSummary: Sendable, Hashable {
    var totals: FollowTotals
    var isFollowed: Bool
    var followsYou: Bool

    static let none = FollowSummary(totals: .zero, isFollowed: false, followsYou: false)
}

extension FollowStore {
    /// Whether `viewer` follows `user`, and whether `user` follows `viewer`.
    /// `viewer`'s relation to `user`: follows, blocks and a mute (one that is not yet over), each
    /// a primary-key lookup, in one statement.
    func relationship(of viewer: Int64, to user: Int64) async throws -> Relationship {
        let rows = try await postgres.query(
            """
            SELECT EXISTS (SELECT 1 FROM social_graph.follows WHERE follower_id = $1 AND followee_id = $2),
                   EXISTS (SELECT 1 FROM social_graph.follows WHERE follower_id = $2 AND followee_id = $1),
                   EXISTS (SELECT 1 FROM social_graph.blocks WHERE blocker_id = $1 AND blocked_id = $2),
                   EXISTS (SELECT 1 FROM social_graph.blocks WHERE blocker_id = $2 AND blocked_id = $1),
                   (SELECT notifications FROM social_graph.mutes
                    WHERE muter_id = $1 AND muted_id = $2 AND (until IS NULL OR until > now()))
            """, [viewer, user])
        let row = rows[0]
        let mute = try row.decode(Bool?.self, at: 4)
        return Relationship(
            isFollowed: try row.decode(Bool.self, at: 0), followsYou: try row.decode(Bool.self, at: 1),
            blocking: try row.decode(Bool.self, at: 2), blockedBy: try row.decode(Bool.self, at: 3), muting: mute != nil,
            mutingNotifications: mute ?? false)
    }

    /// `viewer`'s relation to each of `users`: the ones `viewer` follows and the ones following `viewer`.
    /// Both halves are primary-key lookups, however many followers `viewer` has.
    func relationships(of viewer: Int64, to users: [Int64]) async throws -> (followed: Set<Int64>, followers: Set<Int64>) {
        let rows = try await postgres.query(
            """
            SELECT followee_id, true FROM social_graph.follows WHERE follower_id = $1 AND followee_id = ANY($2)
            UNION ALL
            SELECT follower_id, false FROM social_graph.follows WHERE follower_id = ANY($2) AND followee_id = $1
            """, [viewer, users])
        var followed = Set<Int64>()
        var followers = Set<Int64>()
        for row in rows {
            let id = try row.decode(Int64.self, at: 0)
            if try row.decode(Bool.self, at: 1) { followed.insert(id) } else { followers.insert(id) }
        }
        return (followed, followers)
    }

    /// The totals of each of `users` that has any; users with no follows are absent.
    func totals(of users: [Int64]) async throws -> [Int64: FollowTotals] {
        try await summaries(of: users, viewer: nil).mapValues(\.totals)
    }

    /// The records of `users` (``FollowRecords``), in one statement: everyone's totals and, for
    /// `viewer` when among them, up to `listing` of whom they follow and of who follows them (unlisted
    /// beyond). Users with no follows get zero totals and empty lists.
    func records(of users: [Int64], viewer: Int64?, listing: Int) async throws -> [Int64: FollowRecord] {
        let rows = try await postgres.query(
            """
            SELECT u.id,
                   coalesce(c.followers, 0) + coalesce(d.followers, 0), coalesce(c.following, 0) + coalesce(d.following, 0),
                   CASE WHEN u.id = $2 THEN ARRAY(SELECT followee_id FROM social_graph.follows WHERE follower_id = u.id LIMIT $3) END,
                   CASE WHEN u.id = $2 THEN ARRAY(SELECT follower_id FROM social_graph.follows WHERE followee_id = u.id LIMIT $3) END
            FROM unnest($1::bigint[]) AS u(id)
            LEFT JOIN social_graph.counts AS c ON c.user_id = u.id
            LEFT JOIN LATERAL (
                SELECT sum(followers)::bigint AS followers, sum(following)::bigint AS following
                FROM social_graph.count_deltas WHERE user_id = u.id
            ) AS d ON true
            """, [users, viewer, Int64(listing + 1)])
        var records: [Int64: FollowRecord] = [:]
        for row in rows {
            let totals = FollowTotals(followers: try row.decode(Int64.self, at: 1), following: try row.decode(Int64.self, at: 2))
            var relations = FollowRecord.Relations.unread
            if let followees = try row.decode([Int64]?.self, at: 3), let followers = try row.decode([Int64]?.self, at: 4) {
                relations =
                    followees.count > listing || followers.count > listing
                    ? .unlisted : .listed(followees: followees.sorted(), followers: followers.sorted())
            }
            records[try row.decode(Int64.self, at: 0)] = FollowRecord(totals: totals, relations: relations)
        }
        return records
    }

    /// The totals of each of `users`, and with a `viewer` their relations to the viewer; users with
    /// no follows are absent. One statement, so one round trip and one snapshot: a compaction moving
    /// deltas into counts commits whole, before or after it. The relation halves are primary-key
    /// lookups, however many followers `viewer` has; without a viewer they find nothing.
    func summaries(of users: [Int64], viewer: Int64?) async throws -> [Int64: FollowSummary] {
        let rows = try await postgres.query(
            """
            SELECT user_id, sum(followers)::bigint, sum(following)::bigint, bool_or(followed), bool_or(follows_you) FROM (
                SELECT user_id, followers, following, false AS followed, false AS follows_you
                FROM social_graph.counts WHERE user_id = ANY($1)
                UNION ALL
                SELECT user_id, followers, following, false, false FROM social_graph.count_deltas WHERE user_id = ANY($1)
                UNION ALL
                SELECT followee_id, 0, 0, true, false FROM social_graph.follows WHERE follower_id = $2 AND followee_id = ANY($1)
                UNION ALL
                SELECT follower_id, 0, 0, false, true FROM social_graph.follows WHERE follower_id = ANY($1) AND followee_id = $2
            ) AS parts GROUP BY user_id
            """, [users, viewer])
        var summaries: [Int64: FollowSummary] = [:]
        for row in rows {
            summaries[try row.decode(Int64.self, at: 0)] = FollowSummary(
                totals: FollowTotals(followers: try row.decode(Int64.self, at: 1), following: try row.decode(Int64.self, at: 2)),
                isFollowed: try row.decode(Bool.self, at: 3), followsYou: try row.decode(Bool.self, at: 4))
        }
        return summaries
    }

    /// The most recent follows of the user, and of each of them, that suggestions look at: a
    /// request costs at most 1,000 × 500 index entries, however many accounts are followed.
    static let suggestionSample = (following: 1_000, theirFollowing: 500)

    /// Friends of friends: users followed by those `user` follows, minus `user` and whom `user`
    /// already follows, most mutual connections first, ties by id, counted over the most recent
    /// follows of each (``suggestionSample``). Candidates are counted first (index-only scans of
    /// the follower's recent follows), so the exclusions run once per candidate, not per path.
    func suggestions(for user: Int64, limit: Int) async throws -> [Int64] {
        let rows = try await postgres.query(
            """
            SELECT counted.followee_id FROM (
                SELECT candidate.followee_id, count(*) AS mutual
                FROM (
                    SELECT followee_id FROM social_graph.follows WHERE follower_id = $1 ORDER BY created_at DESC LIMIT $3
                ) AS mine
                CROSS JOIN LATERAL (
                    SELECT followee_id FROM social_graph.follows WHERE follower_id = mine.followee_id
                    ORDER BY created_at DESC LIMIT $4
                ) AS candidate
                GROUP BY candidate.followee_id
            ) AS counted
            WHERE counted.followee_id <> $1
              AND NOT EXISTS (
                  SELECT 1 FROM social_graph.follows AS already
                  WHERE already.follower_id = $1 AND already.followee_id = counted.followee_id)
            ORDER BY counted.mutual DESC, counted.followee_id
            LIMIT $2
            """, [user, limit, Self.suggestionSample.following, Self.suggestionSample.theirFollowing])
        return try rows.map { try $0.decode(Int64.self, at: 0) }
    }
}
