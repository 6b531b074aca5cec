import AviaryAPI
import AviaryJSON
import EventStreams
import Foundation
import Postgres
import RPC

/// A message as stored; `media` is the media service's JSON, kept as text.
struct MessageRow: Sendable {
    var id: Int64
    var conversationID: Int64
    var seq: Int64
    var senderID: Int64
    var text: String?
    var media: String?
    var kind: String
    var createdAt: Date
    var editedAt: Date? = nil
    var deletedAt: Date? = nil
    /// Who reacted with which emoji: `{"<user id>": "<emoji>"}`.
    var reactions: [String: String] = [:]
    /// The message of the conversation this one replies to.
    var replyTo: Int64? = nil
    /// For a system message, the change it records.
    var system: SystemChange? = nil
}

/// Messages and read markers in Postgres (`messaging.messages`, `messaging.members`). A message's
/// `seq` is its place in the conversation, given out under the conversation's row lock, so pages
/// and markers never disagree about order even when sends race on several instances.
struct MessageStore: Sendable {
    let postgres: PostgresClient

    static let columns =
        "id, conversation_id, seq, sender_id, text, media::text, kind, created_at, edited_at, deleted_at, reactions::text, reply_to, system::text"
    /// How many columns ``columns`` names: what a query selects after them starts there.
    static let columnCount = 13

    static func row(_ row: PostgresRow) throws -> MessageRow {
        let reactions = try row.decode(String.self, at: 10)
        return MessageRow(
            id: try row.decode(Int64.self, at: 0), conversationID: try row.decode(Int64.self, at: 1),
            seq: try row.decode(Int64.self, at: 2), senderID: try row.decode(Int64.self, at: 3),
            text: try row.decode(String?.self, at: 4), media: try row.decode(String?.self, at: 5),
            kind: try row.decode(String.self, at: 6), createdAt: try row.decode(Date.self, at: 7),
            editedAt: try row.decode(Date?.self, at: 8), deletedAt: try row.decode(Date?.self, at: 9),
            reactions: reactions == "{}" ? [:] : try RawJSON(unchecked: Array(reactions.utf8)).decode([String: String].self),
            replyTo: try row.decode(Int64?.self, at: 11),
            system: try row.decode(String?.self, at: 12).map { try RawJSON(unchecked: Array($0.utf8)).decode(SystemChange.self) })
    }

    /// The message `id`, nil unless `member` is a current member of its conversation.
    func message(_ id: Int64, member: Int64) async throws -> MessageRow? {
        try await postgres.query(
            """
            SELECT \(Self.columns) FROM messaging.messages m
            WHERE m.id = $1 AND EXISTS (
                SELECT 1 FROM messaging.members b WHERE b.conversation_id = m.conversation_id AND b.user_id = $2 AND b.left_at IS NULL)
            """, [id, member]
        ).first.map(Self.row)
    }

    /// Those of `ids` that `sender` sent and did not delete, in conversations `reporter` is a
    /// current member of.
    func reportable(_ ids: [Int64], sender: Int64, reporter: Int64) async throws -> [MessageRow] {
        guard !ids.isEmpty else { return [] }
        return try await postgres.query(
            """
            SELECT \(Self.columns) FROM messaging.messages m
            WHERE m.id = ANY($1) AND m.sender_id = $2 AND m.deleted_at IS NULL AND EXISTS (
                SELECT 1 FROM messaging.members b WHERE b.conversation_id = m.conversation_id AND b.user_id = $3 AND b.left_at IS NULL)
            """, [ids, sender, reporter]
        ).map(Self.row)
    }

    /// Replaces the text of `id` if `sender` sent it, it is not deleted and it was sent after
    /// `sentAfter`; the message as it is now, or nil when one of those no longer holds.
    func edit(_ id: Int64, sender: Int64, text: String?, sentAfter: Date) async throws -> MessageRow? {
        try await postgres.query(
            """
            UPDATE messaging.messages SET text = $3, edited_at = now()
            WHERE id = $1 AND sender_id = $2 AND deleted_at IS NULL AND created_at > $4
            RETURNING \(Self.columns)
            """, [id, sender, text, sentAfter]
        ).first.map(Self.row)
    }

    /// Deletes `id` for every member if `sender` sent it: its text, media and reactions go, the
    /// row stays as a tombstone. False when it was deleted already.
    func deleteForEveryone(_ id: Int64, sender: Int64) async throws -> Bool {
        try await postgres.execute(
            """
            UPDATE messaging.messages SET text = NULL, media = NULL, reactions = '{}', deleted_at = now()
            WHERE id = $1 AND sender_id = $2 AND deleted_at IS NULL
            """, [id, sender]) == 1
    }

    /// Leaves `id` out of `user`'s history from now on.
    func hide(_ id: Int64, for user: Int64) async throws {
        try await postgres.execute(
            "INSERT INTO messaging.hidden_messages (user_id, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING", [user, id])
    }

    /// Sets `user`'s reaction to `id` to `emoji`, or takes it back when it already is that one;
    /// nil when the message was deleted. One statement: the row's lock orders racing reactions.
    func react(_ id: Int64, user: Int64, emoji: String) async throws -> MessageRow? {
        try await postgres.query(
            """
            UPDATE messaging.messages SET reactions =
                CASE WHEN reactions ->> $2::text = $3::text THEN reactions - $2::text
                ELSE reactions || jsonb_build_object($2::text, $3::text) END
            WHERE id = $1 AND deleted_at IS NULL
            RETURNING \(Self.columns)
            """, [id, String(user), emoji]
        ).first.map(Self.row)
    }

    /// The messages `ids`, in no particular order; unknown ids are left out.
    func messages(_ ids: [Int64]) async throws -> [MessageRow] {
        guard !ids.isEmpty else { return [] }
        return try await postgres.query("SELECT \(Self.columns) FROM messaging.messages WHERE id = ANY($1)", [ids])
            .map(Self.row)
    }

    /// The message `sender` sent to `conversation` with `clientMessageID`, if any.
    func earlierMessage(_ conversation: Int64, sender: Int64, clientMessageID: String) async throws -> MessageRow? {
        try await postgres.query(
            """
            SELECT \(Self.columns) FROM messaging.messages
            WHERE conversation_id = $1 AND sender_id = $2 AND client_message_id = $3
            """, [conversation, sender, clientMessageID]
        ).first.map(Self.row)
    }

    /// What a send stores.
    struct NewMessage: Sendable {
        var conversationID: Int64
        var senderID: Int64
        var text: String?
        var media: String?
        var kind: String
        var clientMessageID: String?
        var replyTo: Int64?
    }

    /// How a send ended.
    enum SendOutcome: Sendable {
        /// Stored; `members` are the conversation's current members, the sender among them.
        case sent(MessageRow, members: [Int64])
        /// The same `clientMessageId` was stored meanwhile (by a racing call): this is that message.
        case duplicate(MessageRow)
        /// The sender is not a current member.
        case notMember
    }

    private struct DuplicateSend: Error {}

    /// Stores `message` as the conversation's next one (its `seq` drawn under the conversation's
    /// row lock) if the sender is a member, moves the sender's read marker to it, and appends its
    /// `messaging`/`message` event to the outbox, naming the other members who did not mute the
    /// conversation (`recipientIds`; the
    /// relay narrows them to those offline, see ``MessagingService/nameOfflineRecipients(_:presence:)``): one
    /// statement, in a transaction that a `clientMessageId` already taken (by a racing call) rolls
    /// back. A `clientMessageId` the sender used before answers the message sent with it then.
    func send(_ message: NewMessage, id: Int64) async throws -> SendOutcome {
        let parameters: [any PostgresEncodable] = [
            id, message.conversationID, message.senderID, message.text, message.media, message.kind,
            message.clientMessageID, message.replyTo,
        ]
        @Sendable func stored(_ rows: PostgresRows) throws -> (MessageRow, [Int64])? {
            guard let first = rows.first else { return nil }
            guard !first.isNull(at: 0) else { throw DuplicateSend() }
            return (try Self.row(first), try first.decode([Int64].self, at: Self.columnCount))
        }
        do {
            // Without a clientMessageId nothing can conflict: the statement is its own transaction.
            let row =
                if message.clientMessageID == nil {
                    try stored(try await postgres.query(Self.insertMessage, parameters))
                } else {
                    try await postgres.transaction { connection in try stored(try await connection.query(Self.insertMessage, parameters)) }
                }
            guard let (row, members) = row else { return .notMember }
            return .sent(row, members: members)
        } catch is DuplicateSend {
            guard let clientMessageID = message.clientMessageID,
                let earlier = try await earlierMessage(message.conversationID, sender: message.senderID, clientMessageID: clientMessageID)
            else { throw RPCError.unavailable("the message could not be stored; retry") }
            return .duplicate(earlier)
        }
    }

    /// No row: the sender is no member. A row of nulls: the conversation was locked but the
    /// `clientMessageId` was taken, so the caller rolls back. Otherwise the message and the members.
    private static let insertMessage = """
        WITH current AS (
            SELECT array_agg(user_id ORDER BY user_id) AS members,
                array_agg(user_id::text) FILTER (WHERE NOT muted AND user_id <> $3) AS audible
            FROM messaging.members
            WHERE conversation_id = $2 AND left_at IS NULL
        ), locked AS (
            UPDATE messaging.conversations
            SET last_seq = last_seq + 1, last_message_id = $1, activity_id = greatest(activity_id, $1), updated_at = now()
            FROM current WHERE id = $2 AND $3 = ANY(current.members)
            RETURNING last_seq, updated_at
        ), inserted AS (
            INSERT INTO messaging.messages (id, conversation_id, seq, sender_id, text, media, kind, client_message_id, created_at, reply_to)
            SELECT $1, $2, locked.last_seq, $3, $4, $5::jsonb, $6, $7, locked.updated_at, $8 FROM locked
            ON CONFLICT (conversation_id, sender_id, client_message_id) WHERE client_message_id IS NOT NULL DO NOTHING
            RETURNING \(columns)
        ), marker AS (
            UPDATE messaging.members m SET read_message_id = inserted.id, read_seq = inserted.seq, took_part = true
            FROM inserted WHERE m.conversation_id = $2 AND m.user_id = $3
        ), event AS (
            INSERT INTO messaging.outbox (topic, type, payload)
            SELECT \(MessagingTopic.sent.outboxColumns), jsonb_build_object(
                'messageId', inserted.id::text, 'conversationId', inserted.conversation_id::text,
                'senderId', inserted.sender_id::text,
                'recipientIds', to_jsonb(current.audible),
                'createdAt', to_char(inserted.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
            FROM inserted, current
        )
        SELECT inserted.*, current.members FROM locked CROSS JOIN current LEFT JOIN inserted ON true
        """

    /// Up to `limit` messages of the conversation from `position` (exclusive) in `order`, plus
    /// whether more follow; read with `database` (a replica's client when the conversation was not
    /// written lately, ``ReplicaReads``).
    /// Messages `viewer` deleted for themselves are left out.
    func history(
        _ conversation: Int64, viewer: Int64, order: HistoryOrder, after position: Int64?, limit: Int, using database: PostgresClient
    ) async throws -> (rows: [MessageRow], more: Bool) {
        let comparison = order == .newest ? "<" : ">"
        let direction = order == .newest ? "DESC" : "ASC"
        var parameters: [any PostgresEncodable] = [conversation, limit + 1, viewer]
        var condition = ""
        if let position {
            parameters.append(position)
            condition = " AND seq \(comparison) $4"
        }
        let rows = try await database.query(
            """
            SELECT \(Self.columns) FROM messaging.messages m
            WHERE conversation_id = $1\(condition)
                AND NOT EXISTS (SELECT 1 FROM messaging.hidden_messages h WHERE h.user_id = $3 AND h.message_id = m.id)
            ORDER BY seq \(direction) LIMIT $2
            """, parameters)
        var messages = try rows.map(Self.row)
        let more = messages.count > limit
        if more { messages.removeLast() }
        return (messages, more)
    }

    /// The current members and their read markers.
    func markers(of conversation: Int64) async throws -> [MemberMarker] {
        try await postgres.query(
            "SELECT user_id, read_seq FROM messaging.members WHERE conversation_id = $1 AND left_at IS NULL ORDER BY joined_at, user_id",
            [conversation]
        ).map { MemberMarker(userID: try $0.decode(Int64.self, at: 0), readSeq: try $0.decode(Int64.self, at: 1)) }
    }

    /// How a read marker move ended.
    enum MarkOutcome: Sendable {
        /// `moved` is false when the marker already was at or past the message.
        case marked(unread: Int64, moved: Bool, readSeq: Int64)
        case notMember
        case unknownMessage
    }

    /// Moves `user`'s read marker forward to `messageID` (never back).
    func markRead(_ conversation: Int64, user: Int64, upTo messageID: Int64) async throws -> MarkOutcome {
        let rows = try await postgres.query(
            """
            WITH target AS (
                SELECT seq FROM messaging.messages WHERE id = $3 AND conversation_id = $1
            ), member AS (
                -- Locked, so it reads the marker as a concurrent move left it, not as the statement began.
                SELECT read_seq FROM messaging.members WHERE conversation_id = $1 AND user_id = $2 AND left_at IS NULL
                FOR UPDATE
            ), moved AS (
                UPDATE messaging.members m SET read_message_id = $3, read_seq = target.seq, took_part = true
                FROM target
                WHERE m.conversation_id = $1 AND m.user_id = $2 AND m.left_at IS NULL AND m.read_seq < target.seq
                RETURNING m.read_seq
            )
            SELECT (SELECT read_seq FROM member), (SELECT seq FROM target), (SELECT count(*) FROM moved), c.last_seq,
                \(ConversationStore.unreadSystemMessages("greatest((SELECT read_seq FROM member), (SELECT seq FROM target))"))
            FROM messaging.conversations c WHERE c.id = $1
            """, [conversation, user, messageID])
        guard let row = rows.first, let before = try row.decode(Int64?.self, at: 0) else { return .notMember }
        guard let target = try row.decode(Int64?.self, at: 1) else { return .unknownMessage }
        let moved = try row.decode(Int64.self, at: 2) > 0
        let read = max(before, target)
        let unread = try row.decode(Int64.self, at: 3) - read - row.decode(Int64.self, at: 4)
        return .marked(unread: max(0, unread), moved: moved, readSeq: read)
    }
}
