import AviaryAPI
import EventStreams
import Foundation
import Postgres
import RPC
import ServiceKit

/// Tweets in Postgres: `tweets.tweets` holds every tweet (a deleted one keeps its row without its
/// text, so that replies and likes still point somewhere) with its like and reply counts, and
/// `tweets.likes` one row per like. Each change is one statement, so one round trip and one
/// transaction: the row, the counts and the outbox event (`tweets.outbox`, relayed to the `tweets`
/// stream) commit together or not at all, and counts move only when a row really changed.
struct TweetStore: Sendable {
    let postgres: PostgresClient

    /// A new tweet, as `create` stores it.
    struct NewTweet: Sendable {
        var id: Int64
        var authorID: Int64
        var text: String
        var replyTo: Int64?
        var mentionIDs: [Int64]
        var hashtags: [String]
        var mediaIDs: [Int64]
        /// The tweet it quotes (an original: ``original(of:)``).
        var quoteOf: Int64?
        var idempotencyKey: String?
    }

    /// What `create` did.
    enum Creation: Sendable, Equatable {
        /// Stored with this id, at this time, replying to a tweet of this user.
        case created(Int64, createdAt: Date, replyToUserID: Int64?)
        /// The author's earlier tweet with the same idempotency key.
        case existing(Int64)
        /// `replyTo` names no live tweet.
        case unknownParent
        /// `quoteOf` names no live tweet.
        case unknownQuote
    }

    /// Stores `tweet` with its `created` event and counts the reply on its parent; with an
    /// idempotency key the author already used, returns the earlier tweet and changes nothing.
    func create(_ tweet: NewTweet) async throws -> Creation {
        let rows = try await postgres.query(
            Self.insertTweet,
            [
                tweet.id, tweet.authorID, tweet.text, tweet.replyTo, tweet.mentionIDs, tweet.hashtags, tweet.mediaIDs,
                tweet.idempotencyKey, tweet.quoteOf,
            ])
        let row = rows[0]
        if let id = try row.decode(Int64?.self, at: 0) {
            return .created(id, createdAt: try row.decode(Date.self, at: 3), replyToUserID: try row.decode(Int64?.self, at: 4))
        }
        if let existing = try row.decode(Int64?.self, at: 2) { return .existing(existing) }
        if tweet.replyTo != nil, try !row.decode(Bool.self, at: 1) { return .unknownParent }
        if tweet.quoteOf != nil, try !row.decode(Bool.self, at: 5) { return .unknownQuote }
        // A concurrent create with the same key committed after this statement's snapshot.
        let again = try await postgres.query(
            "SELECT id FROM tweets.tweets WHERE author_id = $1 AND idempotency_key = $2", [tweet.authorID, tweet.idempotencyKey])
        guard let id = try again.first?.decode(Int64.self, at: 0) else { throw IdempotencyRace() }
        return .existing(id)
    }

    /// The stored tweets among `ids` (any order), with `likedByMe` for `viewer`.
    func tweets(_ ids: [Int64], viewer: Int64?) async throws -> [Int64: TweetRow] {
        try await rows(TweetRow.columns, of: ids, viewer, id: \.id, TweetRow.init(row:))
    }

    /// The live tweet that reposting or quoting `id` means, with its author: `id` itself, or its
    /// original when `id` is a repost. Nil when there is none, or it was deleted.
    func original(of id: Int64) async throws -> (id: Int64, author: Int64)? {
        let rows = try await postgres.query(
            """
            SELECT o.id, o.author_id FROM tweets.tweets AS t JOIN tweets.tweets AS o ON o.id = coalesce(t.repost_of, t.id)
            WHERE t.id = $1 AND o.deleted_at IS NULL
            """, [id])
        guard let row = rows.first else { return nil }
        return (try row.decode(Int64.self, at: 0), try row.decode(Int64.self, at: 1))
    }

    /// The authors of the stored tweets among `ids`, deleted ones included.
    func authors(of ids: [Int64]) async throws -> [Int64: Int64] {
        guard !ids.isEmpty else { return [:] }
        let rows = try await postgres.query("SELECT id, author_id FROM tweets.tweets WHERE id = ANY($1)", [ids])
        return Dictionary(try rows.map { (try $0.decode(Int64.self, at: 0), try $0.decode(Int64.self, at: 1)) }) { first, _ in first }
    }

    /// The counts and flags of the stored tweets among `ids` (any order).
    func states(_ ids: [Int64]) async throws -> [Int64: TweetState] {
        try await rows(TweetState.columns, of: ids, id: \.id, TweetState.init(row:))
    }

    /// The tweets among `ids` that `user` likes.
    func liked(_ ids: [Int64], by user: Int64) async throws -> Set<Int64> {
        guard !ids.isEmpty else { return [] }
        let rows = try await postgres.query(
            "SELECT tweet_id FROM tweets.likes WHERE tweet_id = ANY($1) AND user_id = $2", [ids, user])
        return Set(try rows.map { try $0.decode(Int64.self, at: 0) })
    }

    /// `columns` of the tweets among `ids`, by id; `parameters` follow the ids as `$2`, `$3`, ….
    private func rows<Row>(
        _ columns: String, of ids: [Int64], _ parameters: any PostgresEncodable..., id: KeyPath<Row, Int64>,
        _ decode: (PostgresRow) throws -> Row
    ) async throws -> [Int64: Row] {
        guard !ids.isEmpty else { return [:] }
        let rows = try await postgres.query("SELECT \(columns) FROM tweets.tweets AS t WHERE t.id = ANY($1)", [ids] + parameters)
        var found: [Int64: Row] = [:]
        found.reserveCapacity(rows.count)
        for row in rows {
            let decoded = try decode(row)
            found[decoded[keyPath: id]] = decoded
        }
        return found
    }

    /// A create with a used idempotency key found no tweet under it: the other create rolled back
    /// after blocking this one. Retrying the call makes the tweet.
    struct IdempotencyRace: Error, RPCErrorConvertible {
        var rpcError: RPCError { .conflict("a create with the same idempotencyKey was in flight; retry", field: "idempotencyKey") }
    }

    /// What `delete` did.
    enum Deletion: Sendable, Equatable {
        /// Deleted now; it replied to `parent`, whose reply count fell, or reposted `original`,
        /// whose repost count fell.
        case deleted(parent: Int64?, original: Int64?)
        /// It was deleted before: nothing changed.
        case alreadyDeleted
        case notFound
        /// Someone else wrote it.
        case notAuthor
    }

    /// Deletes `tweet` if `author` wrote it: clears its text, takes it off its parent's reply count
    /// (a repost off its original's repost count) and records the `deleted` event.
    func delete(_ tweet: Int64, by author: Int64) async throws -> Deletion {
        let rows = try await postgres.query(Self.deleteTweet, [tweet, author])
        guard let row = rows.first else { return .notFound }
        guard try row.decode(Int64.self, at: 0) == author else { return .notAuthor }
        guard try row.decode(Int64.self, at: 2) > 0 else { return .alreadyDeleted }
        return .deleted(parent: try row.decode(Int64?.self, at: 3), original: try row.decode(Int64?.self, at: 4))
    }

    /// The statement that records the `created` event of the tweet `source` (a CTE returning
    /// ``returnedColumns``).
    static func createdEvent(of source: String) -> String {
        """
        INSERT INTO tweets.outbox (topic, type, payload)
            SELECT \(TweetsTopic.created.outboxColumns), jsonb_build_object(
                \(tweetFields(source)),
                'createdAt', to_char(\(source).created_at AT TIME ZONE 'UTC', \(rfc3339)))
            FROM \(source)
        """
    }

    /// The event payload fields every `tweets` event about `source` shares (its columns: those of
    /// ``returnedColumns``).
    private static func tweetFields(_ source: String) -> String {
        """
        'tweetId', \(source).id::text, 'authorId', \(source).author_id::text,
        'replyTo', \(source).reply_to::text, 'replyToAuthorId', \(source).reply_to_user_id::text,
        'mentionIds', (SELECT coalesce(jsonb_agg(m::text ORDER BY o), '[]'::jsonb)
            FROM unnest(\(source).mention_ids) WITH ORDINALITY AS u(m, o) WHERE m <> \(source).author_id),
        'repostOf', \(source).repost_of::text,
        'repostOfAuthorId', (SELECT author_id::text FROM tweets.tweets WHERE id = \(source).repost_of),
        'quoteOf', \(source).quote_of::text,
        'quoteOfAuthorId', (SELECT author_id::text FROM tweets.tweets WHERE id = \(source).quote_of)
        """
    }

    /// What a statement writing a tweet returns for ``tweetFields(_:)``.
    static let returnedColumns = "id, author_id, reply_to, reply_to_user_id, mention_ids, repost_of, quote_of, created_at"

    static let rfc3339 = "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'"

    // The parent is read in the statement's snapshot: a reply to a tweet deleted meanwhile can
    // still count on it, and its delete then finds the reply's count already there to take back.
    private static let insertTweet = """
        WITH parent AS (
            SELECT id, author_id FROM tweets.tweets WHERE id = $4::bigint AND deleted_at IS NULL
        ), quoted AS (
            SELECT id FROM tweets.tweets WHERE id = $9::bigint AND deleted_at IS NULL
        ), inserted AS (
            INSERT INTO tweets.tweets
                (id, author_id, text, reply_to, reply_to_user_id, mention_ids, hashtags, media_ids, idempotency_key, quote_of)
            SELECT $1, $2, $3, $4::bigint, (SELECT author_id FROM parent), $5, $6, $7, $8::text, $9::bigint
            WHERE ($4::bigint IS NULL OR EXISTS (SELECT 1 FROM parent)) AND ($9::bigint IS NULL OR EXISTS (SELECT 1 FROM quoted))
            ON CONFLICT (author_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING \(returnedColumns)
        ), counted AS (
            UPDATE tweets.tweets SET replies = replies + 1 WHERE id = (SELECT reply_to FROM inserted)
        ), event AS (
            \(createdEvent(of: "inserted"))
        )
        SELECT (SELECT id FROM inserted), EXISTS (SELECT 1 FROM parent),
            (SELECT id FROM tweets.tweets WHERE author_id = $2 AND idempotency_key = $8::text),
            (SELECT created_at FROM inserted), (SELECT reply_to_user_id FROM inserted), EXISTS (SELECT 1 FROM quoted)
        """

    // The row lock orders a delete after likes and replies in flight on the same tweet.
    static let deleteTweet = """
        WITH target AS (
            SELECT id, author_id, deleted_at FROM tweets.tweets WHERE id = $1 FOR UPDATE
        ), deleted AS (
            UPDATE tweets.tweets AS t SET text = NULL, deleted_at = now()
            FROM target
            WHERE t.id = target.id AND target.author_id = $2 AND target.deleted_at IS NULL
            RETURNING t.id, t.author_id, t.reply_to, t.reply_to_user_id, t.mention_ids, t.repost_of, t.quote_of
        ), counted AS (
            UPDATE tweets.tweets SET replies = replies - 1 WHERE id = (SELECT reply_to FROM deleted) AND replies > 0
        ), uncounted AS (
            UPDATE tweets.tweets SET reposts = reposts - 1 WHERE id = (SELECT repost_of FROM deleted) AND reposts > 0
        ), event AS (
            INSERT INTO tweets.outbox (topic, type, payload)
            SELECT \(TweetsTopic.deleted.outboxColumns), jsonb_build_object(\(tweetFields("deleted")))
            FROM deleted
        )
        SELECT target.author_id, target.deleted_at IS NOT NULL, (SELECT count(*) FROM deleted), (SELECT reply_to FROM deleted),
            (SELECT repost_of FROM deleted)
        FROM target
        """
}
