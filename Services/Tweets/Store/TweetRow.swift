import Foundation
import Postgres

/// One stored tweet with its counts and whether the viewer likes it, as hydration reads it.
struct TweetRow: Sendable {
    var id: Int64
    var authorID: Int64
    /// nil once deleted.
    var text: String?
    var replyTo: Int64?
    var replyToUserID: Int64?
    var mentionIDs: [Int64]
    var hashtags: [String]
    var mediaIDs: [Int64]
    var likes: Int64
    var replies: Int64
    var createdAt: Date
    var deleted: Bool
    var likedByMe: Bool
    /// The original, when this row is a repost.
    var repostOf: Int64?
    var quoteOf: Int64?
    var reposts: Int64
    var repostedByMe: Bool

    /// The columns `init(row:)` reads, in order, from `tweets.tweets AS t`; `$2` is the viewer.
    static let columns = """
        t.id, t.author_id, t.text, t.reply_to, t.reply_to_user_id, t.mention_ids, t.hashtags, t.media_ids,
        t.likes, t.replies, t.created_at, t.deleted_at IS NOT NULL,
        EXISTS (SELECT 1 FROM tweets.likes AS l WHERE l.tweet_id = t.id AND l.user_id = $2::bigint),
        t.repost_of, t.quote_of, t.reposts,
        t.reposts > 0 AND EXISTS (SELECT 1 FROM tweets.tweets AS r
            WHERE r.repost_of = t.id AND r.author_id = $2::bigint AND r.deleted_at IS NULL)
        """

    init(row: PostgresRow) throws {
        id = try row.decode(Int64.self, at: 0)
        authorID = try row.decode(Int64.self, at: 1)
        text = try row.decode(String?.self, at: 2)
        replyTo = try row.decode(Int64?.self, at: 3)
        replyToUserID = try row.decode(Int64?.self, at: 4)
        mentionIDs = try row.decode([Int64].self, at: 5)
        hashtags = try row.decode([String].self, at: 6)
        mediaIDs = try row.decode([Int64].self, at: 7)
        likes = try row.decode(Int64.self, at: 8)
        replies = try row.decode(Int64.self, at: 9)
        createdAt = try row.decode(Date.self, at: 10)
        deleted = try row.decode(Bool.self, at: 11)
        likedByMe = try row.decode(Bool.self, at: 12)
        repostOf = try row.decode(Int64?.self, at: 13)
        quoteOf = try row.decode(Int64?.self, at: 14)
        reposts = try row.decode(Int64.self, at: 15)
        repostedByMe = try row.decode(Bool.self, at: 16)
    }

    /// The users whose summaries the tweet shows (none but the author once deleted, and the parent's author).
    var userIDs: [Int64] {
        [authorID] + (replyToUserID.map { [$0] } ?? []) + (deleted ? [] : mentionIDs)
    }
}

/// What changes on every read of a tweet: its counts and flags, relative to a viewer. Reads take
/// these from ``TweetStates`` and the rest of a tweet from its cached body, so most reads never
/// fetch the text, arrays and dates of ``TweetRow``.
struct StoredTweet: Sendable {
    let id: Int64
    let likes: Int64
    let replies: Int64
    let deleted: Bool
    let likedByMe: Bool
    /// Nil while Postgres cannot say (``TweetStates/unknown(_:)``).
    let authorID: Int64?
    let reposts: Int64
    let repostedByMe: Bool
    /// The original, when this tweet is a repost (``TweetState/repostOf``).
    let repostOf: Int64?
    let quoteOf: Int64?
}

extension StoredTweet {
    /// The counts and flags of a whole row.
    init(_ tweet: TweetRow) {
        self.init(
            id: tweet.id, likes: tweet.likes, replies: tweet.replies, deleted: tweet.deleted, likedByMe: tweet.likedByMe,
            authorID: tweet.authorID, reposts: tweet.reposts, repostedByMe: tweet.repostedByMe, repostOf: tweet.repostOf,
            quoteOf: tweet.quoteOf)
    }
}

/// A tweet's counts and flags as every viewer shares them, with the users who like and repost it
/// while few do, so that whether a viewer likes or reposts it needs no query of its own.
struct TweetState: Sendable {
    /// Up to how many likers (and reposters) a state lists.
    static let listedLikers = 50

    let id: Int64
    let likes: Int64
    let replies: Int64
    let deleted: Bool
    /// Who likes it, when at most ``listedLikers`` do; nil beyond.
    let likers: [Int64]?
    let authorID: Int64
    let reposts: Int64
    /// Who reposts it, when at most ``listedLikers`` do; nil beyond.
    let reposters: [Int64]?
    /// The original, when this tweet is a repost: reads show that in its place.
    let repostOf: Int64?
    /// The tweet this one quotes.
    let quoteOf: Int64?

    /// The columns `init(row:)` reads, in order, from `tweets.tweets AS t`.
    static let columns = """
        t.id, t.likes, t.replies, t.deleted_at IS NOT NULL,
        CASE WHEN t.likes = 0 THEN '{}'::bigint[]
            WHEN t.likes <= \(listedLikers) THEN ARRAY(SELECT l.user_id FROM tweets.likes AS l WHERE l.tweet_id = t.id) END,
        t.author_id, t.reposts,
        CASE WHEN t.reposts = 0 THEN '{}'::bigint[]
            WHEN t.reposts <= \(listedLikers) THEN ARRAY(SELECT r.author_id FROM tweets.tweets AS r
                WHERE r.repost_of = t.id AND r.deleted_at IS NULL) END,
        t.repost_of, t.quote_of
        """

    init(row: PostgresRow) throws {
        id = try row.decode(Int64.self, at: 0)
        likes = try row.decode(Int64.self, at: 1)
        replies = try row.decode(Int64.self, at: 2)
        deleted = try row.decode(Bool.self, at: 3)
        likers = try row.decode([Int64]?.self, at: 4)
        authorID = try row.decode(Int64.self, at: 5)
        reposts = try row.decode(Int64.self, at: 6)
        reposters = try row.decode([Int64]?.self, at: 7)
        repostOf = try row.decode(Int64?.self, at: 8)
        quoteOf = try row.decode(Int64?.self, at: 9)
    }
}
