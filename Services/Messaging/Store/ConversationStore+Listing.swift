import AviaryAPI
import Foundation
import Postgres

/// A current member of a conversation and how far they have read.
struct MemberMarker: Sendable {
    var userID: Int64
    var readSeq: Int64
    var role: MemberRole = .member
}

/// Conversations as stored, with everything needed to hydrate them: fetched with a constant
/// number of queries however many conversations and members there are.
struct ConversationSnapshot: Sendable {
    var headers: [ConversationStore.Header]
    /// Current members of each conversation, in the order they joined.
    var members: [Int64: [MemberMarker]]
    /// The last message of each conversation that the viewer has not deleted for themselves, by
    /// conversation id.
    var lastMessages: [Int64: MessageRow]
}

extension ConversationStore {
    private static let headerColumns =
        "c.id, c.kind, c.title, c.activity_id, c.updated_at, c.last_seq, c.last_message_id, c.picture::text"

    /// A page of `user`'s current conversations, the last changed first, strictly after `cursor`
    /// (`key` the activity id, `id` the conversation id).
    func page(of user: Int64, after cursor: KeysetCursor?, limit: Int) async throws -> (ConversationSnapshot, next: KeysetCursor?) {
        let base = """
            SELECT \(Self.headerColumns), m.read_seq, m.muted, \(Self.unreadSystemMessages("m.read_seq"))
            FROM messaging.members m JOIN messaging.conversations c ON c.id = m.conversation_id
            WHERE m.user_id = $1 AND m.left_at IS NULL
            """
        let rows =
            if let cursor {
                try await postgres.query(
                    base + " AND (c.activity_id, c.id) < ($2, $3) ORDER BY c.activity_id DESC, c.id DESC LIMIT $4",
                    [user, cursor.key, cursor.id, limit + 1])
            } else {
                try await postgres.query(base + " ORDER BY c.activity_id DESC, c.id DESC LIMIT $2", [user, limit + 1])
            }
        var headers = try rows.map(Self.header)
        var next: KeysetCursor?
        if headers.count > limit {
            headers.removeLast(headers.count - limit)
            next = headers.last.map { KeysetCursor(key: $0.activityID, id: $0.id) }
        }
        return (try await complete(headers, viewer: user), next)
    }

    /// The conversations `ids` as `viewer` sees them (a viewer who is not a member has nothing unread).
    func snapshot(of ids: [Int64], viewer: Int64) async throws -> ConversationSnapshot {
        let rows = try await postgres.query(
            """
            SELECT \(Self.headerColumns), coalesce(m.read_seq, c.last_seq), coalesce(m.muted, false),
                \(Self.unreadSystemMessages("coalesce(m.read_seq, c.last_seq)"))
            FROM messaging.conversations c
            LEFT JOIN messaging.members m ON m.conversation_id = c.id AND m.user_id = $2 AND m.left_at IS NULL
            WHERE c.id = ANY($1)
            """, [ids, viewer])
        let byID = Dictionary(try rows.map(Self.header).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return try await complete(ids.compactMap { byID[$0] }, viewer: viewer)
    }

    private func complete(_ headers: [Header], viewer: Int64) async throws -> ConversationSnapshot {
        guard !headers.isEmpty else { return ConversationSnapshot(headers: [], members: [:], lastMessages: [:]) }
        let ids = headers.map(\.id)
        async let memberRows = postgres.query(
            """
            SELECT conversation_id, user_id, read_seq, role FROM messaging.members
            WHERE conversation_id = ANY($1) AND left_at IS NULL
            ORDER BY conversation_id, joined_at, user_id
            """, [ids])
        // Each one's newest by seq (its last_message_id while the viewer hid none), walking back
        // past what the viewer deleted for themselves.
        async let messages = postgres.query(
            """
            SELECT l.* FROM unnest($1::bigint[]) AS c(id) CROSS JOIN LATERAL (
                SELECT \(MessageStore.columns) FROM messaging.messages AS m
                WHERE m.conversation_id = c.id
                    AND NOT EXISTS (SELECT 1 FROM messaging.hidden_messages AS h WHERE h.user_id = $2 AND h.message_id = m.id)
                ORDER BY m.seq DESC LIMIT 1
            ) AS l
            """, [headers.filter { $0.lastMessageID != nil }.map(\.id), viewer]
        ).map(MessageStore.row)
        var members: [Int64: [MemberMarker]] = [:]
        for row in try await memberRows {
            members[try row.decode(Int64.self, at: 0), default: []].append(
                MemberMarker(
                    userID: try row.decode(Int64.self, at: 1), readSeq: try row.decode(Int64.self, at: 2),
                    role: MemberRole(rawValue: try row.decode(String.self, at: 3)) ?? .member))
        }
        let lastMessages = Dictionary(try await messages.map { ($0.conversationID, $0) }, uniquingKeysWith: { first, _ in first })
        return ConversationSnapshot(headers: headers, members: members, lastMessages: lastMessages)
    }

    private static func header(_ row: PostgresRow) throws -> Header {
        Header(
            id: try row.decode(Int64.self, at: 0), kind: try row.decode(ConversationKindValue.self, at: 1),
            title: try row.decode(String?.self, at: 2), activityID: try row.decode(Int64.self, at: 3),
            updatedAt: try row.decode(Date.self, at: 4), lastSeq: try row.decode(Int64.self, at: 5),
            lastMessageID: try row.decode(Int64?.self, at: 6), picture: try row.decode(String?.self, at: 7),
            readSeq: try row.decode(Int64.self, at: 8), muted: try row.decode(Bool.self, at: 9),
            unreadSystemMessages: try row.decode(Int64.self, at: 10))
    }

    /// How many system messages of `c` come after the marker `readSeq` (an SQL expression): they are
    /// in the history, but not unread (the partial index `messages_system` finds them).
    static func unreadSystemMessages(_ readSeq: String) -> String {
        """
        (SELECT count(*) FROM messaging.messages s WHERE s.conversation_id = c.id AND s.kind = 'system' AND s.seq > \(readSeq))
        """
    }
}
