import AviaryAPI
import Postgres

extension NotificationStore {
    /// The newest of `recipient`'s notifications of `kinds` older than `before`, newest first.
    func page(of recipient: Int64, before: Int64?, kinds: [NotificationKind], limit: Int) async throws
        -> [NotificationRow]
    {
        try await postgres.query(
            """
            SELECT \(NotificationRow.columns) FROM notifications.notifications
            WHERE recipient_id = $1 AND id < $2 AND type = ANY($3)
            ORDER BY id DESC LIMIT $4
            """, [recipient, before ?? .max, kinds.map(\.rawValue), Int64(limit)]
        ).map { try NotificationRow(row: $0) }
    }

    /// `recipient`'s notifications after `lastSeen`, oldest first, at most `limit`.
    func after(_ lastSeen: Int64, of recipient: Int64, limit: Int) async throws -> [NotificationRow] {
        try await postgres.query(
            """
            SELECT \(NotificationRow.columns) FROM notifications.notifications
            WHERE recipient_id = $1 AND id > $2
            ORDER BY id LIMIT $3
            """, [recipient, lastSeen, Int64(limit)]
        ).map { try NotificationRow(row: $0) }
    }

    func unreadCount(of recipient: Int64) async throws -> Int64 {
        try await postgres.query(
            "SELECT count(*) FROM notifications.notifications WHERE recipient_id = $1 AND NOT read", [recipient]
        ).first?.decode(Int64.self, at: 0) ?? 0
    }

    /// Marks `recipient`'s notifications up to `upTo` (all when nil) read; returns how many stay unread.
    func markRead(of recipient: Int64, upTo: Int64?) async throws -> Int64 {
        // The count is a statement of its own: it sees what a concurrent markRead marked (which the
        // update waited for and then skipped), where the update's own snapshot would not.
        try await postgres.execute(
            "UPDATE notifications.notifications SET read = true WHERE recipient_id = $1 AND NOT read AND id <= $2",
            [recipient, upTo ?? .max])
        return try await unreadCount(of: recipient)
    }

    /// Deletes `recipient`'s notification `id` (all of them when nil); how many went.
    @discardableResult
    func delete(of recipient: Int64, id: Int64?) async throws -> Int {
        if let id {
            return try await postgres.execute(
                "DELETE FROM notifications.notifications WHERE recipient_id = $1 AND id = $2", [recipient, id])
        }
        return try await postgres.execute("DELETE FROM notifications.notifications WHERE recipient_id = $1", [recipient])
    }
}
