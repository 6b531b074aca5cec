import Postgres
import ServiceKit

/// What messaging erases of a deleted account (``MessagingService/erase(user:)``).
extension MessageStore {
    /// Deletes every message `user` sent for everyone (text, media and reactions cleared, the
    /// tombstone kept, as `messaging.delete` does), takes their reactions off the others' messages
    /// and forgets what they hid and when they were last seen. Reads only the conversations they
    /// were in.
    func erase(user: Int64) async throws {
        try await postgres.execute(
            """
            WITH theirs AS (
                SELECT conversation_id FROM messaging.members WHERE user_id = $1
            ), erased AS (
                UPDATE messaging.messages SET text = NULL, media = NULL, reactions = '{}', deleted_at = coalesce(deleted_at, now())
                WHERE conversation_id IN (SELECT conversation_id FROM theirs) AND sender_id = $1 AND kind <> 'system'
                    AND (deleted_at IS NULL OR reactions <> '{}')
            ), unreacted AS (
                UPDATE messaging.messages SET reactions = reactions - $1::text
                WHERE conversation_id IN (SELECT conversation_id FROM theirs) AND sender_id <> $1 AND reactions ? $1::text
            ), hidden AS (
                DELETE FROM messaging.hidden_messages WHERE user_id = $1
            )
            DELETE FROM messaging.presence WHERE user_id = $1
            """, [user])
    }
}

extension ConversationStore {
    /// The groups `user` is a member of now.
    func currentGroups(of user: Int64) async throws -> [Int64] {
        try await postgres.query(
            """
            SELECT m.conversation_id FROM messaging.members AS m
            JOIN messaging.conversations AS c ON c.id = m.conversation_id
            WHERE m.user_id = $1 AND m.left_at IS NULL AND c.kind = 'group'
            """, [user]
        ).map { try $0.decode(Int64.self, at: 0) }
    }
}

extension MessagingService {
    /// Erases `user`'s messages and reactions once their account is deleted, and takes them out of
    /// every group (an owner hands the group on, as when leaving; the history records it). Their
    /// direct conversations stay, for the other member, with their messages as tombstones.
    /// Idempotent.
    func erase(user: Int64) async throws {
        try await messages.erase(user: user)
        for group in try await conversations.currentGroups(of: user) {
            _ = try await conversations.leave(group, user: user, ids: resources.ids)
        }
    }
}
