import AviaryAPI
import EventStreams
import Postgres

/// Reposts in Postgres: a repost is a row of `tweets.tweets` of its reposter's, without text, whose
/// `repost_of` names the original, and the original's `reposts` counts the live ones. As with
/// likes, the original's row is locked first, so that changes to one tweet's reposts queue behind
/// each other and the count stays exact under any concurrency.
extension TweetStore {
    /// What `repost` and `unrepost` found: the original, its author and its repost count after the call.
    struct RepostOutcome: Sendable, Equatable {
        var original: Int64
        var author: Int64
        var reposts: Int64
        /// Whether this call made or took back a repost (false when there was nothing to do).
        var changed: Bool
        /// The user's live repost after the call.
        var repost: Int64?
    }

    /// Reposts `tweet` (its original, when it is a repost) as `user`, under the new id `id`; nil
    /// when there is no such live tweet.
    func repost(_ tweet: Int64, by user: Int64, id: Int64) async throws -> RepostOutcome? {
        guard let row = try await postgres.query(Self.insertRepost, [tweet, user, id]).first else { return nil }
        var outcome = RepostOutcome(
            original: try row.decode(Int64.self, at: 0), author: try row.decode(Int64.self, at: 1),
            reposts: try row.decode(Int64.self, at: 2), changed: try row.decode(Bool.self, at: 3), repost: id)
        if !outcome.changed {
            // Reposted before: by an earlier call, or by one this call waited for (whose row the
            // statement's snapshot did not see).
            outcome.repost = try await postgres.query(
                "SELECT id FROM tweets.tweets WHERE repost_of = $1 AND author_id = $2 AND deleted_at IS NULL",
                [outcome.original, user]
            ).first?.decode(Int64.self, at: 0)
        }
        return outcome
    }

    /// Takes back `user`'s repost of `tweet` (an original, or a repost of it by anyone), deleting
    /// the repost's row as `tweets.delete` would; nil when there is no such tweet. The original may
    /// be deleted: a repost of it can still be taken back.
    ///
    /// The original's row is locked by a statement of its own first, so that a repost by the same
    /// user that held the lock has committed, and is seen, when the repost is looked for.
    func unrepost(_ tweet: Int64, by user: Int64) async throws -> RepostOutcome? {
        try await postgres.transaction { connection in
            guard let original = try await connection.query(Self.lockOriginal, [tweet]).first else { return nil }
            let (id, author) = (try original.decode(Int64.self, at: 0), try original.decode(Int64.self, at: 1))
            let repost = try await connection.query(
                "SELECT id FROM tweets.tweets WHERE repost_of = $1 AND author_id = $2 AND deleted_at IS NULL", [id, user]
            ).first?.decode(Int64.self, at: 0)
            if let repost { _ = try await connection.query(Self.deleteTweet, [repost, user]) }
            let count = try await connection.query("SELECT reposts FROM tweets.tweets WHERE id = $1", [id])
            return RepostOutcome(
                original: id, author: author, reposts: try count[0].decode(Int64.self, at: 0), changed: repost != nil, repost: nil)
        }
    }

    /// The tweets among `ids` that `user` reposts.
    func reposted(_ ids: [Int64], by user: Int64) async throws -> Set<Int64> {
        guard !ids.isEmpty else { return [] }
        let rows = try await postgres.query(
            "SELECT repost_of FROM tweets.tweets WHERE repost_of = ANY($1) AND author_id = $2 AND deleted_at IS NULL",
            [ids, user])
        return Set(try rows.map { try $0.decode(Int64.self, at: 0) })
    }

    private static let lockOriginal = """
        SELECT o.id, o.author_id FROM tweets.tweets AS t JOIN tweets.tweets AS o ON o.id = coalesce(t.repost_of, t.id)
        WHERE t.id = $1 FOR UPDATE OF o
        """

    private static let insertRepost = """
        WITH original AS (
            SELECT o.id, o.author_id, o.reposts
            FROM tweets.tweets AS t JOIN tweets.tweets AS o ON o.id = coalesce(t.repost_of, t.id)
            WHERE t.id = $1 AND o.deleted_at IS NULL
            FOR UPDATE OF o
        ), inserted AS (
            INSERT INTO tweets.tweets (id, author_id, repost_of) SELECT $3, $2, id FROM original
            ON CONFLICT (repost_of, author_id) WHERE repost_of IS NOT NULL AND deleted_at IS NULL DO NOTHING
            RETURNING \(returnedColumns)
        ), counted AS (
            UPDATE tweets.tweets AS t SET reposts = t.reposts + 1 FROM inserted WHERE t.id = inserted.repost_of
        ), event AS (
            \(createdEvent(of: "inserted"))
        )
        SELECT original.id, original.author_id, original.reposts + (SELECT count(*) FROM inserted),
            EXISTS (SELECT 1 FROM inserted)
        FROM original
        """
}
