import AviaryAPI
import Postgres
import RPC
import ServiceKit

/// The cursor of a follow list: a `KeysetCursor` holding the follow's time (microseconds since
/// 1970) and the other user's id.
enum FollowCursor {
    /// Times a follow can have (1970 to about 5138); a cursor outside them was not made here.
    static let times: ClosedRange<Int64> = 0...100_000_000_000_000_000

    /// Reads the `cursor` param: nil for the first page, a `validation` error for a string this service did not make.
    static func decode(_ text: String?) throws(RPCError) -> KeysetCursor? {
        guard let cursor = try KeysetCursor.decode(text) else { return nil }
        guard times.contains(cursor.key), cursor.id > 0 else {
            throw RPCError.validation("cursor is not a cursor this service returned", field: "cursor")
        }
        return cursor
    }
}

extension FollowStore {
    /// Which side of the edges a list walks.
    enum Direction: Sendable {
        /// Who follows the user.
        case followers
        /// Whom the user follows.
        case following

        /// What a read of `user`'s list names for ``ReplicaReads``: `followers:<id>`, `following:<id>`.
        func list(of user: Int64) -> String {
            switch self {
            case .followers: "followers:\(user)"
            case .following: "following:\(user)"
            }
        }
    }

    /// A keyset page of `user`'s followers or followees, newest follow first (ties by id), strictly
    /// after `cursor`. The cursor holds the follow's time in microseconds and the other user's id,
    /// so edges added or removed between pages cause no gaps or repeats.
    /// Read with `database`: a replica's client when the list was not written lately (``ReplicaReads``).
    /// `unmuted` leaves out the edges whose follower muted the followee: the lists fan-out and
    /// timeline rebuilds read, so a muted user's tweets reach no home timeline of a muter.
    func page(
        _ direction: Direction, of user: Int64, after cursor: KeysetCursor?, limit: Int, using database: PostgresClient,
        unmuted: Bool = false
    ) async throws -> KeysetPage {
        let statements =
            switch (direction, unmuted) {
            case (.followers, false): Self.followerPages
            case (.following, false): Self.followingPages
            case (.followers, true): Self.unmutedFollowerPages
            case (.following, true): Self.unmutedFollowingPages
            }
        return try await statements.page(of: user, after: cursor, limit: limit, using: database)
    }

    /// The statements of one kind of list of users (follows, blocks, mutes), newest first.
    struct PageStatements {
        var first: String
        var after: String

        /// The page of `anchor`'s list strictly after `cursor` (its time in microseconds and id).
        func page(of anchor: Int64, after cursor: KeysetCursor?, limit: Int, using database: PostgresClient) async throws
            -> KeysetPage
        {
            let rows =
                if let cursor {
                    try await database.query(after, [anchor, cursor.key, cursor.id, limit])
                } else {
                    try await database.query(first, [anchor, limit])
                }
            return try KeysetPage(rows: rows, limit: limit)
        }
    }

    /// The first page and the pages after a cursor, for the edges where `anchor` is `$1`: up to
    /// `limit + 1` rows (the extra one says whether a next page exists), newest first, with the
    /// follow time in microseconds on row `limit` only (for the cursor; the numeric arithmetic
    /// costs more than the rest of the query when done on every row). The index is
    /// `(anchor, created_at DESC, other)`: `created_at <= t` bounds its scan and the rest of the
    /// condition only skips the edges of the cursor's own instant.
    /// `extra` adds to the condition (` AND …`).
    static func pageStatements(
        anchor: String, other: String, table: String = "social_graph.follows", extra: String = ""
    ) -> PageStatements {
        let order = "ORDER BY created_at DESC, \(other)"
        let position = "(TIMESTAMPTZ 'epoch' + $2::bigint * INTERVAL '1 microsecond')"
        func page(where condition: String, limit: String) -> String {
            """
            SELECT \(other), CASE WHEN row_number() OVER (\(order)) = \(limit)
                THEN (EXTRACT(EPOCH FROM created_at) * 1000000)::bigint END
            FROM (
                SELECT \(other), created_at FROM \(table) WHERE \(condition) \(order) LIMIT \(limit) + 1
            ) AS page
            \(order)
            """
        }
        return PageStatements(
            first: page(where: "\(anchor) = $1\(extra)", limit: "$2"),
            after: page(
                where: "\(anchor) = $1 AND created_at <= \(position) AND (created_at < \(position) OR \(other) > $3)\(extra)",
                limit: "$4"))
    }

    private static let followerPages = pageStatements(anchor: "followee_id", other: "follower_id")
    private static let followingPages = pageStatements(anchor: "follower_id", other: "followee_id")
    /// An edge whose follower muted the followee is left out (``MuteStore``).
    private static let notMuted = """
         AND NOT EXISTS (
            SELECT 1 FROM social_graph.mutes AS m WHERE m.muter_id = follower_id AND m.muted_id = followee_id)
        """
    private static let unmutedFollowerPages = pageStatements(anchor: "followee_id", other: "follower_id", extra: notMuted)
    private static let unmutedFollowingPages = pageStatements(anchor: "follower_id", other: "followee_id", extra: notMuted)
}
