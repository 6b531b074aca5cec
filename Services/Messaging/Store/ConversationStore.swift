import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Postgres
import RPC
import ServiceKit

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
        /// A group's picture: the media service's JSON of it.
        var picture: String?
        /// The viewer's read marker (`read_seq`).
        var readSeq: Int64
        /// Whether the viewer muted it.
        var muted: Bool
        /// The system messages after the viewer's read marker, which do not count as unread.
        var unreadSystemMessages: Int64

        /// How many messages the viewer has not read, system messages left out.
        var unreadCount: Int64 { max(0, lastSeq - readSeq - unreadSystemMessages) }
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

    /// Makes a group with `members` (the creator among them, its owner), its history opening with
    /// a `created` system message (id `messageID`).
    func createGroup(id: Int64, creator: Int64, title: String, members: [Int64], messageID: Int64) async throws -> MessageRow {
        try await postgres.transaction { connection in
            try await connection.execute(
                """
                WITH created AS (
                    INSERT INTO messaging.conversations (id, kind, title, created_by, activity_id)
                    VALUES ($1, 'group', $2, $3, $1)
                    RETURNING id
                )
                INSERT INTO messaging.members (conversation_id, user_id, took_part, role)
                SELECT created.id, member, member = $3, CASE WHEN member = $3 THEN 'owner' ELSE 'member' END
                FROM created, unnest($4::bigint[]) AS member
                """, [id, title, creator, members])
            return try await Self.record(
                SystemChange(change: .created, actorId: EntityID(creator), userIds: members.filter { $0 != creator }.map { EntityID($0) }),
                id: messageID, in: id, on: connection)
        }
    }

    /// Why a change to a group was refused.
    enum ChangeRefusal: Error {
        /// The caller is not a current member (or there is no such conversation).
        case notMember
        /// The conversation is a direct one.
        case direct
        /// The group would have more than `memberLimit` members.
        case full(current: Int)
        /// The caller's role does not allow it; the message says what does.
        case notAllowed(String)
        /// The user the change names is not a current member.
        case notAMember
        /// The change names the caller, or the owner, where it cannot.
        case invalidUser(String)
    }

    /// What a change to a group did: the members before it, and the system messages that record it.
    struct ChangeRecord: Sendable {
        var before: [Int64]
        var messages: [MessageRow]
    }

    /// Runs `change` on the group locked for it, as `caller` (whose role it is given), and records
    /// what it returns in the history as system messages with ids from `ids`.
    private func change(
        _ conversation: Int64, caller: Int64, ids: SnowflakeGenerator,
        _ change: (PostgresConnection, MemberRole) async throws -> Result<[SystemChange], ChangeRefusal>
    ) async throws -> Result<ChangeRecord, ChangeRefusal> {
        try await postgres.transaction { connection in
            guard let (kind, role) = try await Self.lockedGroup(conversation, caller: caller, on: connection) else {
                return .failure(.notMember)
            }
            if kind == .direct { return .failure(.direct) }
            let before = try await Self.currentMembers(conversation, on: connection).map(\.user)
            switch try await change(connection, role) {
            case .failure(let refusal):
                return .failure(refusal)
            case .success(let changes):
                var messages: [MessageRow] = []
                for system in changes { messages.append(try await Self.record(system, id: ids.next(), in: conversation, on: connection)) }
                return .success(ChangeRecord(before: before, messages: messages))
            }
        }
    }

    /// Adds `users` to the group (again, for those who had left) as `caller`; the ids that became
    /// members now are the `membersAdded` record's. New members' read markers start at the latest
    /// message.
    func addMembers(_ conversation: Int64, caller: Int64, users: [Int64], ids: SnowflakeGenerator) async throws
        -> Result<ChangeRecord, ChangeRefusal>
    {
        try await change(conversation, caller: caller, ids: ids) { connection, _ in
            let current = try await Self.currentMembers(conversation, on: connection).map(\.user)
            let newcomers = Array(Set(users).subtracting(current)).sorted()
            guard current.count + newcomers.count <= Self.memberLimit else { return .failure(.full(current: current.count)) }
            guard !newcomers.isEmpty else { return .success([]) }
            try await connection.execute(
                """
                INSERT INTO messaging.members AS m (conversation_id, user_id, read_message_id, read_seq)
                SELECT $1, member, coalesce(c.last_message_id, 0), c.last_seq
                FROM unnest($2::bigint[]) AS member, messaging.conversations c WHERE c.id = $1
                ON CONFLICT (conversation_id, user_id) DO UPDATE
                SET left_at = NULL, joined_at = now(), read_message_id = EXCLUDED.read_message_id, read_seq = EXCLUDED.read_seq,
                    role = 'member', muted = false
                """, [conversation, newcomers])
            return .success([SystemChange(change: .membersAdded, actorId: EntityID(caller), userIds: newcomers.map { EntityID($0) })])
        }
    }

    /// Ends `user`'s membership of the group. An owner who leaves hands the group to the admin who
    /// joined first, or else the member who did.
    func leave(_ conversation: Int64, user: Int64, ids: SnowflakeGenerator) async throws -> Result<ChangeRecord, ChangeRefusal> {
        try await change(conversation, caller: user, ids: ids) { connection, role in
            try await Self.end(user, in: conversation, on: connection)
            var changes = [SystemChange(change: .memberLeft, actorId: EntityID(user), userIds: [EntityID(user)])]
            let rest = try await Self.currentMembers(conversation, on: connection)
            if role == .owner, let heir = rest.first(where: { $0.role == .admin }) ?? rest.first {
                try await Self.setRole(.owner, of: heir.user, in: conversation, on: connection)
                changes.append(SystemChange(change: .ownershipTransferred, actorId: EntityID(user), userIds: [EntityID(heir.user)]))
            }
            return .success(changes)
        }
    }

    /// Removes `user` from the group as `caller`: the owner may remove anyone else, an admin only
    /// members.
    func removeMember(_ conversation: Int64, caller: Int64, user: Int64, ids: SnowflakeGenerator) async throws
        -> Result<ChangeRecord, ChangeRefusal>
    {
        try await change(conversation, caller: caller, ids: ids) { connection, role in
            guard user != caller else { return .failure(.invalidUser("to remove yourself, leave the group")) }
            guard let target = try await Self.currentMembers(conversation, on: connection).first(where: { $0.user == user }) else {
                return .failure(.notAMember)
            }
            switch (role, target.role) {
            case (.owner, _), (.admin, .member): break
            case (.admin, _): return .failure(.notAllowed("an admin may remove members, not admins or the owner"))
            case (.member, _): return .failure(.notAllowed("only the group's owner and admins may remove members"))
            }
            try await Self.end(user, in: conversation, on: connection)
            return .success([SystemChange(change: .memberRemoved, actorId: EntityID(caller), userIds: [EntityID(user)])])
        }
    }

    /// Makes `user` an admin or a member again (`role` is not `owner`), as the owner `caller`.
    func setRole(_ role: MemberRole, of user: Int64, in conversation: Int64, caller: Int64, ids: SnowflakeGenerator) async throws
        -> Result<ChangeRecord, ChangeRefusal>
    {
        try await change(conversation, caller: caller, ids: ids) { connection, callerRole in
            guard callerRole == .owner else { return .failure(.notAllowed("only the group's owner may change roles")) }
            guard user != caller else { return .failure(.invalidUser("the owner's role changes only by handing the group over")) }
            guard let target = try await Self.currentMembers(conversation, on: connection).first(where: { $0.user == user }) else {
                return .failure(.notAMember)
            }
            guard target.role != role else { return .success([]) }
            try await Self.setRole(role, of: user, in: conversation, on: connection)
            return .success([SystemChange(change: .roleChanged, actorId: EntityID(caller), userIds: [EntityID(user)], role: role)])
        }
    }

    /// Hands the group to `user`, as its owner `caller`, who stays as an admin.
    func transferOwnership(_ conversation: Int64, caller: Int64, to user: Int64, ids: SnowflakeGenerator) async throws
        -> Result<ChangeRecord, ChangeRefusal>
    {
        try await change(conversation, caller: caller, ids: ids) { connection, role in
            guard role == .owner else { return .failure(.notAllowed("only the group's owner may hand it over")) }
            guard user != caller else { return .failure(.invalidUser("you own the group already")) }
            guard try await Self.currentMembers(conversation, on: connection).contains(where: { $0.user == user }) else {
                return .failure(.notAMember)
            }
            try await Self.setRole(.owner, of: user, in: conversation, on: connection)
            try await Self.setRole(.admin, of: caller, in: conversation, on: connection)
            return .success([SystemChange(change: .ownershipTransferred, actorId: EntityID(caller), userIds: [EntityID(user)])])
        }
    }

    /// Sets the group's title as `caller`.
    func rename(_ conversation: Int64, caller: Int64, title: String, ids: SnowflakeGenerator) async throws
        -> Result<ChangeRecord, ChangeRefusal>
    {
        try await change(conversation, caller: caller, ids: ids) { connection, _ in
            try await connection.execute("UPDATE messaging.conversations SET title = $2 WHERE id = $1", [conversation, title])
            return .success([SystemChange(change: .renamed, actorId: EntityID(caller), userIds: [], title: title)])
        }
    }

    /// Sets the group's picture (the media service's JSON of it; nil removes it) as `caller`.
    func setPicture(_ conversation: Int64, caller: Int64, picture: String?, ids: SnowflakeGenerator) async throws
        -> Result<ChangeRecord, ChangeRefusal>
    {
        try await change(conversation, caller: caller, ids: ids) { connection, _ in
            try await connection.execute("UPDATE messaging.conversations SET picture = $2::jsonb WHERE id = $1", [conversation, picture])
            return .success([SystemChange(change: .pictureChanged, actorId: EntityID(caller), userIds: [])])
        }
    }

    /// Locks the conversation row if `caller` is a current member: its kind and the caller's role;
    /// nil otherwise.
    private static func lockedGroup(_ conversation: Int64, caller: Int64, on connection: PostgresConnection) async throws
        -> (ConversationKindValue, MemberRole)?
    {
        let rows = try await connection.query(
            """
            SELECT c.kind, m.role FROM messaging.conversations c
            JOIN messaging.members m ON m.conversation_id = c.id AND m.user_id = $2 AND m.left_at IS NULL
            WHERE c.id = $1
            FOR UPDATE OF c
            """, [conversation, caller])
        guard let row = rows.first else { return nil }
        return (try row.decode(ConversationKindValue.self, at: 0), MemberRole(rawValue: try row.decode(String.self, at: 1)) ?? .member)
    }

    /// The current members with their roles, in the order they joined.
    private static func currentMembers(_ conversation: Int64, on connection: PostgresConnection) async throws
        -> [(user: Int64, role: MemberRole)]
    {
        try await connection.query(
            "SELECT user_id, role FROM messaging.members WHERE conversation_id = $1 AND left_at IS NULL ORDER BY joined_at, user_id",
            [conversation]
        ).map { (try $0.decode(Int64.self, at: 0), MemberRole(rawValue: try $0.decode(String.self, at: 1)) ?? .member) }
    }

    private static func end(_ user: Int64, in conversation: Int64, on connection: PostgresConnection) async throws {
        try await connection.execute(
            "UPDATE messaging.members SET left_at = now(), role = 'member' WHERE conversation_id = $1 AND user_id = $2",
            [conversation, user])
    }

    private static func setRole(_ role: MemberRole, of user: Int64, in conversation: Int64, on connection: PostgresConnection)
        async throws
    {
        try await connection.execute(
            "UPDATE messaging.members SET role = $3 WHERE conversation_id = $1 AND user_id = $2", [conversation, user, role.rawValue])
    }

    /// Records `system` in the history of the locked `conversation` as a system message (`id`)
    /// sent by its actor, whose read marker moves to it while they are a member; the conversation's
    /// activity moves with it.
    private static func record(_ system: SystemChange, id: Int64, in conversation: Int64, on connection: PostgresConnection)
        async throws -> MessageRow
    {
        let rows = try await connection.query(
            """
            WITH locked AS (
                UPDATE messaging.conversations
                SET last_seq = last_seq + 1, last_message_id = $1, activity_id = greatest(activity_id, $1), updated_at = now()
                WHERE id = $2
                RETURNING last_seq, updated_at
            ), inserted AS (
                INSERT INTO messaging.messages (id, conversation_id, seq, sender_id, kind, system, created_at)
                SELECT $1, $2, locked.last_seq, $3, 'system', $4::jsonb, locked.updated_at FROM locked
                RETURNING \(MessageStore.columns)
            ), marker AS (
                UPDATE messaging.members m SET read_message_id = inserted.id, read_seq = inserted.seq
                FROM inserted WHERE m.conversation_id = $2 AND m.user_id = $3 AND m.left_at IS NULL
            )
            SELECT * FROM inserted
            """, [id, conversation, system.actorId.value, String(decoding: try WireEncoding.encode(system), as: UTF8.self)])
        guard let row = rows.first else { throw RPCError.unavailable("the change could not be recorded; retry") }
        return try MessageStore.row(row)
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
    private let pairs = Locked<[Int64: (low: Int64, high: Int64)?]>([:])

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
