import AviaryAPI
import Postgres
import RPC
import ServiceKit

/// The cursor of `likedBy` and `bookmarks`: the like's or bookmark's time in microseconds and the
/// tweet id. (Lists ordered by tweet id carry the last id as both parts of a `KeysetCursor`:
/// `KeysetCursor.decodeID`.)
enum TweetCursor {
    /// Reads a `likedBy` or `bookmarks` cursor: nil for the first page.
    static func timed(_ text: String?) throws(RPCError) -> KeysetCursor? {
        guard let cursor = try KeysetCursor.decode(text) else { return nil }
        guard (0...100_000_000_000_000_000).contains(cursor.key), cursor.id > 0 else { throw KeysetCursor.refusal() }
        return cursor
    }
}

extension TweetStore {
    /// `author`'s live tweets newest first, strictly before the tweet id `before`.
    /// The pages here are read with `database`: a replica's client when what they list was not
    /// written lately (``ReplicaReads``, ``TweetsService/authorsTweets(_:)``).
    func byAuthor(
        _ author: Int64, includeReplies: Bool, before: Int64?, limit: Int, using database: PostgresClient
    ) async throws -> TweetListPage {
        let roots = includeReplies ? "" : " AND reply_to IS NULL"
        return try await tweetPage(
            """
            SELECT id, author_id FROM tweets.tweets
            WHERE author_id = $1 AND deleted_at IS NULL\(roots) AND id < $2 ORDER BY id DESC LIMIT $3
            """, [author, before ?? Int64.max], limit: limit, using: database)
    }

    /// The live replies to `tweet`, oldest first, strictly after the tweet id `after`.
    func replies(to tweet: Int64, after: Int64?, limit: Int, using database: PostgresClient) async throws -> TweetListPage {
        try await tweetPage(
            """
            SELECT id, author_id FROM tweets.tweets
            WHERE reply_to = $1 AND deleted_at IS NULL AND id > $2 ORDER BY id LIMIT $3
            """, [tweet, after ?? 0], limit: limit, using: database)
    }

    /// Live tweets holding every one of `words` (full text, any form) and `hashtags`, newest first.
    func search(
        words: String, hashtags: [String], before: Int64?, limit: Int, using database: PostgresClient
    ) async throws -> TweetListPage {
        let before = before ?? Int64.max
        // One statement per shape, so each plan uses its GIN index rather than a generic plan's guess.
        if hashtags.isEmpty {
            return try await tweetPage(
                """
                SELECT id, author_id FROM tweets.tweets
                WHERE search @@ plainto_tsquery('simple', $1) AND deleted_at IS NULL AND id < $2 ORDER BY id DESC LIMIT $3
                """, [words, before], limit: limit, using: database)
        }
        if words.isEmpty {
            return try await tweetPage(
                """
                SELECT id, author_id FROM tweets.tweets
                WHERE hashtags @> $1 AND deleted_at IS NULL AND id < $2 ORDER BY id DESC LIMIT $3
                """, [hashtags, before], limit: limit, using: database)
        }
        return try await tweetPage(
            """
            SELECT id, author_id FROM tweets.tweets
            WHERE search @@ plainto_tsquery('simple', $1) AND hashtags @> $2 AND deleted_at IS NULL AND id < $3
            ORDER BY id DESC LIMIT $4
            """, [words, hashtags, before], limit: limit, using: database)
    }

    /// The network's live tweets newest first, strictly before the tweet id `before`: no reposts,
    /// and no replies but those to their own author; with `mediaOnly`, those with media alone.
    func latest(mediaOnly: Bool, before: Int64?, limit: Int, using database: PostgresClient) async throws -> TweetListPage {
        // The primary key read backwards, or the partial index of tweets with media.
        let media = mediaOnly ? " AND media_ids <> '{}'" : ""
        return try await tweetPage(
            """
            SELECT id, author_id FROM tweets.tweets
            WHERE deleted_at IS NULL AND repost_of IS NULL AND (reply_to IS NULL OR reply_to_user_id = author_id)\(media)
                AND id < $1
            ORDER BY id DESC LIMIT $2
            """, [before ?? Int64.max], limit: limit, using: database)
    }

    /// The live tweets `user` bookmarked, most recent bookmark first.
    func bookmarked(by user: Int64, after cursor: KeysetCursor?, limit: Int) async throws -> TweetListPage {
        try await timedPage(of: "tweets.bookmarks", user: user, after: cursor, limit: limit)
    }

    /// Bookmarks `tweet` for `user`; false when it does not exist or was deleted.
    func bookmark(_ tweet: Int64, by user: Int64) async throws -> Bool {
        let live = try await postgres.query(
            """
            WITH target AS (SELECT id FROM tweets.tweets WHERE id = $1 AND deleted_at IS NULL), added AS (
                INSERT INTO tweets.bookmarks (user_id, tweet_id) SELECT $2, id FROM target
                ON CONFLICT (user_id, tweet_id) DO NOTHING
            )
            SELECT 1 FROM target
            """, [tweet, user])
        return !live.isEmpty
    }

    /// Takes `tweet` out of `user`'s bookmarks.
    func unbookmark(_ tweet: Int64, by user: Int64) async throws {
        _ = try await postgres.query("DELETE FROM tweets.bookmarks WHERE user_id = $1 AND tweet_id = $2", [user, tweet])
    }

    /// What ``pin(_:by:)`` did.
    enum PinOutcome: Sendable {
        case pinned
        case notTheirs
        case unknown
    }

    /// Pins `tweet` on `user`'s profile, in place of any other, if it is their live tweet.
    func pin(_ tweet: Int64, by user: Int64) async throws -> PinOutcome {
        let rows = try await postgres.query(
            """
            WITH target AS (SELECT author_id FROM tweets.tweets WHERE id = $1 AND deleted_at IS NULL), pinned AS (
                INSERT INTO tweets.pins (user_id, tweet_id) SELECT $2, $1 FROM target WHERE author_id = $2
                ON CONFLICT (user_id) DO UPDATE SET tweet_id = EXCLUDED.tweet_id, pinned_at = now()
            )
            SELECT author_id FROM target
            """, [tweet, user])
        guard let author = try rows.first?.decode(Int64.self, at: 0) else { return .unknown }
        return author == user ? .pinned : .notTheirs
    }

    /// Takes `user`'s pinned tweet off their profile.
    func unpin(by user: Int64) async throws {
        try await postgres.execute("DELETE FROM tweets.pins WHERE user_id = $1", [user])
    }

    /// The tweet `user` pinned, if any (it may have been deleted since).
    func pinned(by user: Int64) async throws -> Int64? {
        try await postgres.query("SELECT tweet_id FROM tweets.pins WHERE user_id = $1", [user]).first?.decode(Int64.self, at: 0)
    }

    /// The live tweets `user` liked, most recent like first.
    func liked(by user: Int64, after cursor: KeysetCursor?, limit: Int) async throws -> TweetListPage {
        try await timedPage(of: "tweets.likes", user: user, after: cursor, limit: limit)
    }

    /// A page of the live tweets of `user`'s rows in `table` (likes, bookmarks: `user_id`,
    /// `tweet_id`, `created_at`), most recent first, after the cursor (the row's time in
    /// microseconds and the tweet id).
    private func timedPage(of table: String, user: Int64, after cursor: KeysetCursor?, limit: Int) async throws -> TweetListPage {
        let position = cursor.map { ($0.key, $0.id) } ?? (Int64.max / 2, Int64.max)
        let rows = try await postgres.query(
            """
            SELECT l.tweet_id, (EXTRACT(EPOCH FROM l.created_at) * 1000000)::bigint, t.author_id
            FROM \(table) AS l JOIN tweets.tweets AS t ON t.id = l.tweet_id AND t.deleted_at IS NULL
            WHERE l.user_id = $1
                AND (l.created_at, l.tweet_id) < (TIMESTAMPTZ 'epoch' + $2::bigint * INTERVAL '1 microsecond', $3::bigint)
            ORDER BY l.created_at DESC, l.tweet_id DESC LIMIT $4
            """, [user, min(position.0, 100_000_000_000_000_000), position.1, limit + 1])
        return try TweetListPage(rows: rows, limit: limit, keyColumn: 1)
    }

    /// The users who like `tweet`, by user id from the highest, strictly below `before`.
    func likers(of tweet: Int64, before: Int64?, limit: Int) async throws -> KeysetPage {
        try await idPage(
            "SELECT user_id FROM tweets.likes WHERE tweet_id = $1 AND user_id < $2 ORDER BY user_id DESC LIMIT $3",
            [tweet, before ?? Int64.max], limit: limit)
    }

    /// The live reposts of `tweet`, most recent first, strictly before the repost `before`: each
    /// repost's id with its reposter.
    func reposters(of tweet: Int64, before: Int64?, limit: Int) async throws -> TweetListPage {
        try await tweetPage(
            """
            SELECT id, author_id FROM tweets.tweets
            WHERE repost_of = $1 AND deleted_at IS NULL AND id < $2 ORDER BY id DESC LIMIT $3
            """, [tweet, before ?? Int64.max], limit: limit, using: postgres)
    }

    /// Up to `limit` live tweets of `authors`, newest first across them, strictly before `before`:
    /// each author's newest from its index, then merged.
    func recent(of authors: [Int64], before: Int64?, limit: Int) async throws -> [(id: Int64, author: Int64)] {
        guard !authors.isEmpty else { return [] }
        let rows = try await postgres.query(
            """
            SELECT t.id, t.author_id FROM unnest($1::bigint[]) AS a(id)
            CROSS JOIN LATERAL (
                SELECT id, author_id FROM tweets.tweets
                WHERE author_id = a.id AND deleted_at IS NULL AND id < $2 ORDER BY id DESC LIMIT $3
            ) AS t
            ORDER BY t.id DESC LIMIT $3
            """, [Array(Set(authors)), before ?? Int64.max, limit])
        return try rows.map { (try $0.decode(Int64.self, at: 0), try $0.decode(Int64.self, at: 1)) }
    }

    /// How many live tweets each of `users` has, counting each author's no further than `limit`
    /// (nil: all of them). Users without any are left out.
    func tweetCounts(of users: [Int64], upTo limit: Int64?) async throws -> [Int64: Int64] {
        guard !users.isEmpty else { return [:] }
        let rows = try await postgres.query(
            """
            SELECT a.id, c.tweets FROM unnest($1::bigint[]) AS a(id) CROSS JOIN LATERAL (
                SELECT count(*) AS tweets FROM (
                    SELECT 1 FROM tweets.tweets WHERE author_id = a.id AND deleted_at IS NULL LIMIT $2
                ) AS live
            ) AS c WHERE c.tweets > 0
            """, [Array(Set(users)), limit])
        var counts: [Int64: Int64] = [:]
        for row in rows { counts[try row.decode(Int64.self, at: 0)] = try row.decode(Int64.self, at: 1) }
        return counts
    }

    /// The tweets that show `user`'s summary: theirs, replies to them, and those mentioning them.
    /// One read (8 bytes an id, a few MB for the most popular users): paging it would read the
    /// three branches again for every page, none of which comes out in id order.
    func showing(user: Int64) async throws -> [Int64] {
        let rows = try await postgres.query(
            """
            SELECT id FROM tweets.tweets WHERE author_id = $1
            UNION SELECT id FROM tweets.tweets WHERE reply_to_user_id = $1
            UNION SELECT id FROM tweets.tweets WHERE mention_ids @> ARRAY[$1::bigint]
            """, [user])
        return try rows.map { try $0.decode(Int64.self, at: 0) }
    }

    /// Runs a page query whose last parameter is the limit, asking one row more to learn whether a
    /// next page exists.
    private func idPage(_ sql: String, _ parameters: [any PostgresEncodable], limit: Int) async throws -> KeysetPage {
        try KeysetPage(rows: try await postgres.query(sql, parameters + [limit + 1]), limit: limit, keyColumn: 0)
    }

    /// A page of tweets ordered by id, selected as `id, author_id`.
    private func tweetPage(
        _ sql: String, _ parameters: [any PostgresEncodable], limit: Int, using database: PostgresClient
    ) async throws -> TweetListPage {
        try TweetListPage(rows: try await database.query(sql, parameters + [limit + 1]), limit: limit, keyColumn: 0)
    }
}

/// A page of tweet ids and each one's author, read in the page's own statement (its last column):
/// what a viewer's blocks leave out is known without reading the tweets again.
struct TweetListPage: Sendable {
    var ids: [Int64]
    var next: KeysetCursor?
    var authors: [Int64: Int64]

    init(rows: PostgresRows, limit: Int, keyColumn: Int) throws {
        let page = try KeysetPage(rows: rows, limit: limit, keyColumn: keyColumn)
        (ids, next) = (page.ids, page.next)
        let authorColumn = keyColumn + 1
        authors = Dictionary(
            try rows.prefix(limit).map { (try $0.decode(Int64.self, at: 0), try $0.decode(Int64.self, at: authorColumn)) },
            uniquingKeysWith: { first, _ in first })
    }
}
