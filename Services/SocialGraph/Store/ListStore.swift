import AviaryAPI
import Foundation
import Postgres
import ServiceKit

/// Lists in Postgres: `social_graph.lists` holds one row per list, `social_graph.list_members`
/// one per member. Only users the owner follows are added, and an unfollow (or a block, or an
/// account's erasure) takes the followee off the follower's lists in the statement that ends the
/// follow (``FollowStore/deletion(of:prefix:)``).
struct ListStore: Sendable {
    let postgres: PostgresClient

    /// Why a change to a list was refused.
    enum Refusal: Error {
        /// The owner has ``ListLimits/listsPerUser`` lists already.
        case tooManyLists
        /// The list would have more than ``ListLimits/membersPerList`` members.
        case full(current: Int)
        /// The owner does not follow this user.
        case notFollowed(Int64)
    }

    /// Makes a list of `owner`'s, unless they have as many as they may.
    func create(id: Int64, owner: Int64, title: String, policy: ListRepliesPolicy) async throws -> UserList {
        try await postgres.transaction { connection in
            // One list made at a time per owner, so two at once cannot both pass the count.
            try await connection.execute("SELECT pg_advisory_xact_lock(hashtext('social_graph.lists'), hashtext($1::text))", [owner])
            let count = try await connection.query("SELECT count(*) FROM social_graph.lists WHERE owner_id = $1", [owner])
            guard try count[0].decode(Int64.self, at: 0) < ListLimits.listsPerUser else { throw Refusal.tooManyLists }
            let rows = try await connection.query(
                """
                INSERT INTO social_graph.lists (id, owner_id, title, replies_policy) VALUES ($1, $2, $3, $4)
                RETURNING \(Self.columns)
                """, [id, owner, title, policy])
            return try Self.list(rows[0])
        }
    }

    /// Changes what is given of `owner`'s list `id`; nil when it is not theirs.
    func update(_ id: Int64, owner: Int64, title: String?, policy: ListRepliesPolicy?) async throws -> UserList? {
        try await postgres.query(
            """
            UPDATE social_graph.lists SET title = coalesce($3, title), replies_policy = coalesce($4, replies_policy)
            WHERE id = $1 AND owner_id = $2
            RETURNING \(Self.columns)
            """, [id, owner, title, policy]
        ).first.map(Self.list)
    }

    /// Deletes `owner`'s list `id` and its members; false when there was none.
    func delete(_ id: Int64, owner: Int64) async throws -> Bool {
        try await !postgres.query("DELETE FROM social_graph.lists WHERE id = $1 AND owner_id = $2 RETURNING 1", [id, owner]).isEmpty
    }

    /// `owner`'s list `id`; nil when it is not theirs.
    func list(_ id: Int64, owner: Int64) async throws -> UserList? {
        try await postgres.query("SELECT \(Self.columns) FROM social_graph.lists WHERE id = $1 AND owner_id = $2", [id, owner])
            .first.map(Self.list)
    }

    /// Every list of `owner`'s, oldest first.
    func lists(of owner: Int64) async throws -> [UserList] {
        try await postgres.query("SELECT \(Self.columns) FROM social_graph.lists WHERE owner_id = $1 ORDER BY id", [owner])
            .map(Self.list)
    }

    /// `owner`'s lists that hold `member`, oldest first.
    func lists(of owner: Int64, holding member: Int64) async throws -> [UserList] {
        try await postgres.query(
            """
            SELECT \(Self.columns) FROM social_graph.lists
            WHERE id IN (SELECT list_id FROM social_graph.list_members WHERE owner_id = $1 AND member_id = $2)
            ORDER BY id
            """, [owner, member]
        ).map(Self.list)
    }

    /// Adds `members` to `owner`'s list `id`, each of whom `owner` must follow; nil when the list is
    /// not theirs. The list's row is locked, so two additions cannot pass its limit together.
    func add(_ members: [Int64], to id: Int64, owner: Int64) async throws -> UserList? {
        try await postgres.transaction { connection -> UserList? in
            guard try await !connection.query("SELECT 1 FROM social_graph.lists WHERE id = $1 AND owner_id = $2 FOR UPDATE", [id, owner]).isEmpty
            else { return nil }
            let followed = Set(
                try await connection.query(
                    "SELECT followee_id FROM social_graph.follows WHERE follower_id = $1 AND followee_id = ANY($2::bigint[])",
                    [owner, members]
                ).map { try $0.decode(Int64.self, at: 0) })
            if let stranger = members.first(where: { !followed.contains($0) }) { throw Refusal.notFollowed(stranger) }
            let counts = try await connection.query(
                """
                SELECT count(*), count(*) FILTER (WHERE member_id = ANY($2::bigint[]))
                FROM social_graph.list_members WHERE list_id = $1
                """, [id, members])
            let (current, already) = (try counts[0].decode(Int64.self, at: 0), try counts[0].decode(Int64.self, at: 1))
            guard Int(current - already) + Set(members).count <= ListLimits.membersPerList else {
                throw Refusal.full(current: Int(current))
            }
            try await connection.execute(
                """
                INSERT INTO social_graph.list_members (list_id, member_id, owner_id)
                SELECT $1, member, $2 FROM unnest($3::bigint[]) AS member
                ON CONFLICT (list_id, member_id) DO NOTHING
                """, [id, owner, members])
            return try await connection.query("SELECT \(Self.columns) FROM social_graph.lists WHERE id = $1", [id]).first.map(Self.list)
        }
    }

    /// Takes `members` off `owner`'s list `id`; nil when the list is not theirs.
    func remove(_ members: [Int64], from id: Int64, owner: Int64) async throws -> UserList? {
        try await postgres.query(
            """
            WITH gone AS (
                DELETE FROM social_graph.list_members WHERE list_id = $1 AND owner_id = $2 AND member_id = ANY($3::bigint[])
                RETURNING member_id
            )
            SELECT \(Self.listColumns(less: "(SELECT count(*) FROM gone)")) FROM social_graph.lists WHERE id = $1 AND owner_id = $2
            """, [id, owner, members]
        ).first.map(Self.list)
    }

    /// A keyset page of the members of list `id`, most recently added first (ties by id).
    func members(of id: Int64, after cursor: KeysetCursor?, limit: Int) async throws -> KeysetPage {
        try await Self.pages.page(of: id, after: cursor, limit: limit, using: postgres)
    }

    /// The members of `owner`'s list `id` but those `owner` mutes, and its replies policy; nil when
    /// it is not theirs.
    func feed(_ id: Int64, owner: Int64) async throws -> ListFeed? {
        let rows = try await postgres.query(
            """
            SELECT l.replies_policy, m.member_id FROM social_graph.lists AS l
            LEFT JOIN social_graph.list_members AS m ON m.list_id = l.id AND NOT EXISTS (
                SELECT 1 FROM social_graph.mutes AS u WHERE u.muter_id = l.owner_id AND u.muted_id = m.member_id)
            WHERE l.id = $1 AND l.owner_id = $2
            """, [id, owner])
        guard let first = rows.first else { return nil }
        return ListFeed(
            memberIds: try rows.compactMap { try $0.decode(Int64?.self, at: 1).map { EntityID($0) } },
            repliesPolicy: try first.decode(ListRepliesPolicy.self, at: 0))
    }

    /// Deletes `user`'s lists, and takes them off everyone's.
    func erase(user: Int64) async throws {
        try await postgres.execute(
            """
            WITH owned AS (DELETE FROM social_graph.lists WHERE owner_id = $1)
            DELETE FROM social_graph.list_members WHERE member_id = $1
            """, [user])
    }

    private static let pages = FollowStore.pageStatements(anchor: "list_id", other: "member_id", table: "social_graph.list_members")

    /// The columns ``list(_:)`` reads, the member count less `less` (a count just deleted, which
    /// the statement's snapshot still sees).
    private static func listColumns(less: String) -> String {
        """
        id, title, replies_policy, created_at,
        (SELECT count(*) FROM social_graph.list_members AS m WHERE m.list_id = social_graph.lists.id) - \(less)
        """
    }

    private static let columns = listColumns(less: "0")

    private static func list(_ row: PostgresRow) throws -> UserList {
        UserList(
            id: EntityID(try row.decode(Int64.self, at: 0)), title: try row.decode(String.self, at: 1),
            repliesPolicy: try row.decode(ListRepliesPolicy.self, at: 2), members: Int(try row.decode(Int64.self, at: 4)),
            createdAt: try row.decode(Date.self, at: 3))
    }
}

extension ListRepliesPolicy: PostgresEncodable, PostgresDecodable {}
