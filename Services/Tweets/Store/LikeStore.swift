import AviaryAPI
import EventStreams
import Postgres

/// Likes in Postgres: one `tweets.likes` row per (tweet, user), and the tweet's `likes` count
/// changed only when that row was really inserted or deleted. The tweet's row is locked first (in
/// `like`'s statement; in a statement of its own before `unlike`'s), so changes to one tweet's likes
/// queue behind each other and each reads the count the one before left: the count is exact under
/// any concurrency.
struct LikeStore: Sendable {
    let postgres: PostgresClient

    /// The tweet's like count after `user` likes it; nil when it does not exist or was deleted.
    func like(_ tweet: Int64, by user: Int64) async throws -> Int64? {
        try await postgres.query(Self.like, [tweet, user]).first?.decode(Int64.self, at: 0)
    }

    /// The tweet's like count after `user` stopped liking it; nil when it does not exist or was deleted.
    ///
    /// The tweet's row is locked by a statement of its own first: a like by the same user that
    /// held the lock (a double tap) has committed by then, and the deletion, in a statement that
    /// begins after it, sees its row. In one statement the deletion would look for the row in the
    /// snapshot from before the wait, find nothing, and leave the like that the user undid.
    func unlike(_ tweet: Int64, by user: Int64) async throws -> Int64? {
        try await postgres.transaction { connection in
            guard try await !connection.query(Self.lockTweet, [tweet]).isEmpty else { return nil }
            return try await connection.query(Self.unlike, [tweet, user]).first?.decode(Int64.self, at: 0)
        }
    }

    private static let lockTweet = "SELECT FROM tweets.tweets WHERE id = $1 AND deleted_at IS NULL FOR UPDATE"

    private static let like = """
        WITH target AS (
            SELECT id, author_id, likes FROM tweets.tweets WHERE id = $1 AND deleted_at IS NULL FOR UPDATE
        ), liked AS (
            INSERT INTO tweets.likes (tweet_id, user_id) SELECT id, $2 FROM target
            ON CONFLICT (tweet_id, user_id) DO NOTHING
            RETURNING tweet_id, created_at
        ), counted AS (
            UPDATE tweets.tweets AS t SET likes = t.likes + 1 FROM liked WHERE t.id = liked.tweet_id
        ), event AS (
            INSERT INTO tweets.outbox (topic, type, payload)
            SELECT \(TweetsTopic.liked.outboxColumns), jsonb_build_object(
                'tweetId', target.id::text, 'authorId', target.author_id::text, 'userId', $2::bigint::text,
                'at', to_char(liked.created_at AT TIME ZONE 'UTC', \(TweetStore.rfc3339)))
            FROM liked, target
        )
        SELECT target.likes + (SELECT count(*) FROM liked) FROM target
        """

    private static let unlike = """
        WITH target AS (
            SELECT id, author_id, likes FROM tweets.tweets WHERE id = $1 AND deleted_at IS NULL FOR UPDATE
        ), unliked AS (
            DELETE FROM tweets.likes AS l USING target WHERE l.tweet_id = target.id AND l.user_id = $2
            RETURNING l.tweet_id
        ), counted AS (
            UPDATE tweets.tweets AS t SET likes = t.likes - 1 FROM unliked WHERE t.id = unliked.tweet_id
        ), event AS (
            INSERT INTO tweets.outbox (topic, type, payload)
            SELECT \(TweetsTopic.unliked.outboxColumns), jsonb_build_object(
                'tweetId', target.id::text, 'authorId', target.author_id::text, 'userId', $2::bigint::text)
            FROM unliked, target
        )
        SELECT target.likes - (SELECT count(*) FROM unliked) FROM target
        """
}
