import EventStreams
import Postgres

extension TweetStore {
    /// Erases what tweets keeps of `user`, whose account was deleted, in one statement: their
    /// tweets and reposts become tombstones without text, mentions, hashtags or media (so that
    /// replies and quotes of them still point somewhere), what they counted on others' tweets
    /// (replies, reposts, likes) is taken back, and their likes, bookmarks and pin go. Idempotent.
    /// Returns the tweets whose states changed.
    func erase(user: Int64) async throws -> [Int64] {
        try await postgres.query(
            """
            WITH gone AS (
                UPDATE tweets.tweets SET text = NULL, deleted_at = now(), mention_ids = '{}', hashtags = '{}', media_ids = '{}'
                WHERE author_id = $1 AND deleted_at IS NULL
                RETURNING id, reply_to, repost_of
            ), unliked AS (
                DELETE FROM tweets.likes WHERE user_id = $1 RETURNING tweet_id
            ), counted AS (
                SELECT id, sum(replies) AS replies, sum(reposts) AS reposts, sum(likes) AS likes FROM (
                    SELECT reply_to AS id, 1 AS replies, 0 AS reposts, 0 AS likes FROM gone WHERE reply_to IS NOT NULL
                    UNION ALL SELECT repost_of, 0, 1, 0 FROM gone WHERE repost_of IS NOT NULL
                    UNION ALL SELECT tweet_id, 0, 0, 1 FROM unliked
                ) AS changes GROUP BY id
            ), recounted AS (
                -- Their own tweets are tombstones already (one statement may not update a row twice).
                UPDATE tweets.tweets AS t SET replies = greatest(t.replies - c.replies, 0),
                    reposts = greatest(t.reposts - c.reposts, 0), likes = greatest(t.likes - c.likes, 0)
                FROM counted AS c WHERE t.id = c.id AND t.author_id <> $1
                RETURNING t.id
            ), bookmarks AS (
                DELETE FROM tweets.bookmarks WHERE user_id = $1
            ), pins AS (
                DELETE FROM tweets.pins WHERE user_id = $1
            )
            SELECT id FROM gone UNION SELECT id FROM recounted
            """, [user]
        ).map { try $0.decode(Int64.self, at: 0) }
    }
}
