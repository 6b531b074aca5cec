import Foundation
import Postgres
import RPC
import Synchronization

/// Conversations and their members in Postgres (`messaging.conversations`, `messaging.members`).
/// Every change that others must see moves the conversation's `activity_id`, so the list of
/// conversations stays ordered by the last thing that happened in each.
struct ConversationStore: Sendable {
    let postgres: PostgresClient
    /// The two members of each direct conversation looked up lately (nil for a group), which never
    /// change: a send asks it whether the two blocked one another.
    private let pairs = DirectPairs()

    /// The most members a group may have, its creator included.
    static let memberLimit = 256

    /// What a member sees of a conversation before hydration.
    struct Header: Sendable {
        var id: Int64
        var kind: ConversationKindValue
        var title: String?
        var activityID: Int64
        var updatedAt: Date
        var lastSeq: Int64
        var lastMessageID: Int64?
        /// The viewer's read marker (`read_seq`).
        var readSeq: Int64
        /// Whether the viewer muted it.
        var muted: Bool
    }

    enum ConversationKindValue: String, Sendable, PostgresDecodable {
        case direct
        case group
    }

    /// The direct conversation of `a` and `b`, made (with both as members) when it does not exist
    /// yet; `id` is used only then. Returns its id and whether it was made now.
    func openDirect(_ a: Int64, _ b: Int64, creator: Int64, id: Int64) async throws -> (id: Int64, created: Bool) {
        let (low, high) = a < b ? (a, b) : (b, a)
        // Twice: a call racing another that made the same pair finds nothing in its own snapshot.
        for _ in 0..<2 {
            let rows = try await postgres.query(Self.openDirect, [id, low, high, creator])
            if let row = rows.first { return (try row.decode(Int64.self, at: 0), try row.decode(Bool.self, at: 1)) }
        }
        throw RPCError.unavailable("the conversation could not be opened; retry")
    }

    private static let openDirect = """
        WITH created AS (
            INSERT INTO messaging.conversations (id, kind, direct_low, direct_high, created_by, activity_id)
            VALUES ($1, 'direct', $2, $3, $4, $1)
            ON CONFLICT (direct_low, direct_high) DO NOTHING
            RETURNING id
        ), joined AS (
            INSERT INTO messaging.members (conversation_id, user_id, took_part)
            SELECT created.id, member, member = $4 FROM created, unnest(ARRAY[$2, $3]::bigint[]) AS member
        )
        SELECT id, true FROM created
        UNION ALL
        SELECT id, false FROM messaging.conversations WHERE direct_low = $2 AND direct_high = $3
        """

    /// Makes a group with `members` (the creator among them).
    func createGroup(id: Int64, creator: Int64, title: String, members: [Int64]) async throws {
        _ = try await postgres.query(
            """
            WITH created AS (
                INSERT INTO messaging.conversations (id, kind, title, created_by, activity_id)
                VALUES ($1, 'group', $2, $3, $1)
                RETURNING id
            )
            INSERT INTO messaging.members (conversation_id, user_id, took_part)
            SELECT created.id, member, member = $3 FROM created, unnest($4::bigint[]) AS member
            RETURNING user_id
            """, [id, title, creator, members])
    }

    /// Why a change to a group was refused.
    enum ChangeRefusal: Error {
        /// The caller is not a current member (or there is no such conversation).
        case notMember
        /// The conversation is a direct one.
        case direct
        /// The group would have more than `memberLimit` members.
        case full(current: Int)
    }

    /// Adds `users` to the group (again, for those who had left) as `caller`; returns the ids that
    /// became members now. New members' read markers start at the latest message.
    func addMembers(_ conversation: Int64, caller: Int64, users: [Int64], activityID: Int64) async throws
        -> Result<[Int64], ChangeRefusal>
    {
        try await postgres.transaction { connection in
            guard let kind = try await Self.lockedGroup(conversation, caller: caller, on: connection) else { return .failure(.notMember) }
            if kind == .direct { return .failure(.direct) }
            let current = try await connection.query(
                "SELECT user_id FROM messaging.members WHERE conversation_id = $1 AND left_at IS NULL", [conversation]
            ).map { try $0.decode(Int64.self, at: 0) }
            let newcomers = Array(Set(users).subtracting(current)).sorted()
            guard current.count + newcomers.count <= Self.memberLimit else { return .failure(.full(current: current.count)) }
            guard !newcomers.isEmpty else { return .success([]) }
            try await connection.execute(
                """
                INSERT INTO messaging.members AS m (conversation_id, user_id, read_message_id, read_seq)
                SELECT $1, member, coalesce(c.last_message_id, 0), c.last_seq
                FROM unnest($2::bigint[]) AS member, messaging.conversations c WHERE c.id = $1
                ON CONFLICT (conversation_id, user_id) DO UPDATE
                SET left_at = NULL, joined_at = now(), read_message_id = EXCLUDED.read_message_id, read_seq = EXCLUDED.read_seq
                """, [conversation, newcomers])
            try await Self.touch(conversation, activityID: activityID, on: connection)
            return .success(newcomers)
        }
    }

    /// Ends `user`'s membership of the group; the members before the change, or the refusal.
    func leave(_ conversation: Int64, user: Int64, activityID: Int64) async throws -> Result<[Int64], ChangeRefusal> {
        try await postgres.transaction { connection in
            guard let kind = try await Self.lockedGroup(conversation, caller: user, on: connection) else { return .failure(.notMember) }
            if kind == .direct { return .failure(.direct) }
            let before = try await connection.query(
                "SELECT user_id FROM messaging.members WHERE conversation_id = $1 AND left_at IS NULL", [conversation]
            ).map { try $0.decode(Int64.self, at: 0) }
            try await connection.execute(
                "UPDATE messaging.members SET left_at = now() WHERE conversation_id = $1 AND user_id = $2", [conversation, user])
            try await Self.touch(conversation, activityID: activityID, on: connection)
            return .success(before)
        }
    }

    /// Sets the group's title as `caller`.
    func rename(_ conversation: Int64, caller: Int64, title: String, activityID: Int64) async throws -> Result<Void, ChangeRefusal> {
        try await postgres.transaction { connection in
            guard let kind = try await Self.lockedGroup(conversation, caller: caller, on: connection) else { return .failure(.notMember) }
            if kind == .direct { return .failure(.direct) }
            try await connection.execute("UPDATE messaging.conversations SET title = $2 WHERE id = $1", [conversation, title])
            try await Self.touch(conversation, activityID: activityID, on: connection)
            return .success(())
        }
    }

    /// Locks the conversation row if `caller` is a current member; nil otherwise.
    private static func lockedGroup(_ conversation: Int64, caller: Int64, on connection: PostgresConnection) async throws
        -> ConversationKindValue?
    {
        let rows = try await connection.query(
            """
            SELECT c.kind FROM messaging.conversations c
            JOIN messaging.members m ON m.conversation_id = c.id AND m.user_id = $2 AND m.left_at IS NULL
            WHERE c.id = $1
            FOR UPDATE OF c
            """, [conversation, caller])
        guard let row = rows.first else { return nil }
        return try row.decode(ConversationKindValue.self, at: 0)
    }

    private static func touch(_ conversation: Int64, activityID: Int64, on connection: PostgresConnection) async throws {
        try await connection.execute(
            "UPDATE messaging.conversations SET activity_id = greatest(activity_id, $2), updated_at = now() WHERE id = $1",
            [conversation, activityID])
    }

    /// The current member ids of `conversation` if `user` is one of them; nil otherwise.
    func members(of conversation: Int64, ifIncluding user: Int64) async throws -> [Int64]? {
        let rows = try await postgres.query(
            "SELECT user_id FROM messaging.members WHERE conversation_id = $1 AND left_at IS NULL", [conversation])
        let members = try rows.map { try $0.decode(Int64.self, at: 0) }
        return members.contains(user) ? members : nil
    }

    /// The other member of `conversation` when it is a direct conversation of `user`'s; nil otherwise.
    func directPeer(of conversation: Int64, for user: Int64) async throws -> Int64? {
        let pair: (low: Int64, high: Int64)?
        if let known = pairs.known(conversation) {
            pair = known
        } else {
            let row = try await postgres.query(
                "SELECT direct_low, direct_high FROM messaging.conversations WHERE id = $1", [conversation]
            ).first
            guard let row else { return nil }  // none yet: asked again next time
            let (low, high) = (try row.decode(Int64?.self, at: 0), try row.decode(Int64?.self, at: 1))
            pair = low.flatMap { low in high.map { (low, $0) } }
            pairs.keep(pair, for: conversation)
        }
        guard let pair, user == pair.low || user == pair.high else { return nil }
        return user == pair.low ? pair.high : pair.low
    }

    /// Sets whether `user` muted `conversation`; false when they are no current member.
    func setMuted(_ muted: Bool, conversation: Int64, user: Int64) async throws -> Bool {
        try await !postgres.query(
            """
            UPDATE messaging.members SET muted = $3 WHERE conversation_id = $1 AND user_id = $2 AND left_at IS NULL
            RETURNING 1
            """, [conversation, user, muted]
        ).isEmpty
    }

    /// Whether `user` is a current member of `conversation`.
    func isMember(_ conversation: Int64, user: Int64) async throws -> Bool {
        try await !postgres.query(
            "SELECT 1 FROM messaging.members WHERE conversation_id = $1 AND user_id = $2 AND left_at IS NULL",
            [conversation, user]
        ).isEmpty
    }

    /// Who sees `user`'s presence: the other members of the current conversations `user` took
    /// part in (made, sent in or read). Being put in a conversation (a stranger's openDirect, a
    /// group) shows a user to nobody, so nobody can watch when a stranger is online.
    func presenceAudience(of user: Int64) async throws -> [Int64] {
        try await postgres.query(
            """
            SELECT DISTINCT other.user_id
            FROM messaging.members mine
            JOIN messaging.members other ON other.conversation_id = mine.conversation_id AND other.left_at IS NULL
            WHERE mine.user_id = $1 AND mine.left_at IS NULL AND mine.took_part AND other.user_id <> $1
            """, [user]
        ).map { try $0.decode(Int64.self, at: 0) }
    }

    /// Those of `candidates` whose presence `viewer` sees (``presenceAudience(of:)`` the other way round).
    func presenceVisible(to viewer: Int64, among candidates: [Int64]) async throws -> [Int64] {
        try await postgres.query(
            """
            SELECT DISTINCT other.user_id
            FROM messaging.members mine
            JOIN messaging.members other ON other.conversation_id = mine.conversation_id AND other.left_at IS NULL
            WHERE mine.user_id = $1 AND mine.left_at IS NULL AND other.took_part AND other.user_id = ANY($2)
            """, [viewer, candidates]
        ).map { try $0.decode(Int64.self, at: 0) }
    }
}

/// The members of direct conversations by id, for ``ConversationStore/directPeer(of:for:)``: at
/// most ``capacity``, forgotten all at once beyond (they are read again, one statement each).
private final class DirectPairs: Sendable {
    static let capacity = 100_000
    private let pairs = Mutex<[Int64: (low: Int64, high: Int64)?]>([:])

    /// `.some(nil)` for a group, nil for a conversation not looked up.
    func known(_ conversation: Int64) -> (low: Int64, high: Int64)?? {
        pairs.withLock { $0[conversation] }
    }

    func keep(_ pair: (low: Int64, high: Int64)?, for conversation: Int64) {
        pairs.withLock { pairs in
            if pairs.count >= Self.capacity { pairs = [:] }
            pairs[conversation] = .some(pair)
        }
    }
}
