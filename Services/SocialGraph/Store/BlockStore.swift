import AviaryAPI
import EventStreams
import Postgres
import Redis
import ServiceKit

/// Blocks in Postgres: `social_graph.blocks` holds one row per block. A block ends the follows
/// between the two in the same statement (their deltas and `unfollow` events with them, so every
/// home timeline loses what it showed of the other), and ``FollowStore/follow(follower:followee:)``
/// inserts no edge while either blocked the other.
struct BlockStore: Sendable {
    let postgres: PostgresClient
    let redis: RedisClient

    /// Tells every process that keeps who is blocked with whom (``ServiceResources/blocked(among:with:)``)
    /// to forget `users`: call after a block or unblock of theirs commits and before it answers, so
    /// that whatever either does next is checked against it, on any instance.
    func announce(_ users: [Int64]) async throws {
        try await LocalCopyKind.blocks(keptBy: .socialGraph).announce(users, on: redis)
    }

    /// The condition, on `$1` and `$2`, that either blocked the other.
    static let eitherWay = """
        SELECT 1 FROM social_graph.blocks
        WHERE (blocker_id = $1 AND blocked_id = $2) OR (blocker_id = $2 AND blocked_id = $1)
        """

    /// `blocker` blocks `blocked`; the follows between them end. Returns how many follows ended.
    func block(_ blocker: Int64, _ blocked: Int64) async throws -> Int {
        try await postgres.query(Self.insertBlock, [blocker, blocked]).count
    }

    /// Lifts `blocker`'s block of `blocked`; true if there was one.
    func unblock(_ blocker: Int64, _ blocked: Int64) async throws -> Bool {
        try await !postgres.query(
            "DELETE FROM social_graph.blocks WHERE blocker_id = $1 AND blocked_id = $2 RETURNING 1", [blocker, blocked]
        ).isEmpty
    }

    /// Whether either of the two blocked the other.
    func isBlocked(_ user: Int64, _ other: Int64) async throws -> Bool {
        try await !postgres.query(Self.eitherWay, [user, other]).isEmpty
    }

    /// Every user `user` blocked or who blocked `user` (each half an index range).
    func blocked(with user: Int64) async throws -> Set<Int64> {
        let rows = try await postgres.query(
            """
            SELECT blocked_id FROM social_graph.blocks WHERE blocker_id = $1
            UNION
            SELECT blocker_id FROM social_graph.blocks WHERE blocked_id = $1
            """, [user])
        return Set(try rows.map { try $0.decode(Int64.self, at: 0) })
    }

    /// A keyset page of the users `blocker` blocked, most recent block first (ties by id).
    func page(of blocker: Int64, after cursor: KeysetCursor?, limit: Int) async throws -> KeysetPage {
        try await Self.pages.page(of: blocker, after: cursor, limit: limit, using: postgres)
    }

    private static let pages = FollowStore.pageStatements(anchor: "blocker_id", other: "blocked_id", table: "social_graph.blocks")

    /// The block row (kept when it exists) and the deletion of the follows both ways, in one
    /// statement. A follow that starts after it commits sees the block; one committed at the same
    /// instant, which neither statement's snapshot saw, can outlive it (blocking again ends it).
    /// A follow statement that began before a block committed read no block, and may commit its
    /// edge after the block's statement deleted the pair's follows. Each block is therefore looked
    /// at again ``recheckDelay`` later, when every such statement has long ended (a statement is
    /// abandoned after `AVIARY_POSTGRES_STATEMENT_TIMEOUT_MS`, 10 s by default).
    static let recheckDelay = 60

    private static let insertBlock = FollowStore.deletion(
        of: "(follower_id = $1 AND followee_id = $2) OR (follower_id = $2 AND followee_id = $1)",
        prefix: """
            block AS (
                INSERT INTO social_graph.blocks (blocker_id, blocked_id) VALUES ($1, $2)
                ON CONFLICT (blocker_id, blocked_id) DO NOTHING
            ), recheck AS (
                INSERT INTO social_graph.block_rechecks (blocker_id, blocked_id, due_at)
                VALUES ($1, $2, now() + make_interval(secs => \(recheckDelay)))
                ON CONFLICT (blocker_id, blocked_id) DO UPDATE SET due_at = excluded.due_at
            ),
            """)

    /// Ends the follows between the pairs of the blocks due a second look, while the block stands
    /// (with their deltas and `unfollow` events, as a block's own statement does); how many.
    func recheck() async throws -> Int {
        try await postgres.query(Self.recheckDue, []).count
    }

    private static let recheckDue = FollowStore.deletion(
        of: """
            EXISTS (
                SELECT 1 FROM due
                WHERE (due.blocker_id = follower_id AND due.blocked_id = followee_id)
                    OR (due.blocker_id = followee_id AND due.blocked_id = follower_id))
            AND EXISTS (
                SELECT 1 FROM social_graph.blocks AS b
                WHERE (b.blocker_id = follower_id AND b.blocked_id = followee_id)
                    OR (b.blocker_id = followee_id AND b.blocked_id = follower_id))
            """,
        prefix: """
            due AS (
                DELETE FROM social_graph.block_rechecks WHERE due_at <= now() RETURNING blocker_id, blocked_id
            ),
            """)
}
