import Foundation
import Postgres

/// `notifications.notifications` and `notifications.consumed_events`: the changes events make,
/// applied per batch in one transaction.
struct NotificationStore: Sendable {
    let postgres: PostgresClient
    let ids: @Sendable () -> Int64

    /// What one event does to the stored notifications.
    enum Change: Sendable, Hashable {
        case add(NewNotification)
        /// Deletes the recipient's notifications with these keys.
        case withdraw(recipient: Int64, keys: [String])
        /// Deletes the recipient's notifications whose key starts with `prefix`.
        case withdrawPrefix(recipient: Int64, prefix: String)
    }

    /// What a batch changed: the notifications it made and the ones it withdrew (id, recipient).
    struct Outcome: Sendable {
        var added: [NotificationRow] = []
        var withdrawn: [(id: Int64, recipient: Int64)] = []
    }

    /// Applies each event's changes unless the event was applied before (by its deduplication key),
    /// all in one transaction.
    func apply(_ events: [(key: String, changes: [Change])]) async throws -> Outcome {
        let ids = self.ids
        return try await postgres.transaction { connection in
            var outcome = Outcome()
            for event in events {
                guard try await !connection.query(Self.markConsumed, [event.key]).isEmpty else { continue }
                for change in event.changes {
                    switch change {
                    case .add(let new):
                        let rows = try await connection.query(
                            Self.insert,
                            [ids(), new.recipient, new.kind.rawValue, new.actor, new.tweet, new.conversation, new.key, new.createdAt])
                        outcome.added += try rows.map(NotificationRow.init(row:))
                    case .withdraw(let recipient, let keys):
                        let rows = try await connection.query(Self.deleteKeys, [recipient, keys])
                        outcome.withdrawn += try rows.map { (try $0.decode(Int64.self, at: 0), recipient) }
                    case .withdrawPrefix(let recipient, let prefix):
                        let rows = try await connection.query(Self.deletePrefix, [recipient, prefix])
                        outcome.withdrawn += try rows.map { (try $0.decode(Int64.self, at: 0), recipient) }
                    }
                }
            }
            return outcome
        }
    }

    /// Forgets applied events older than `age` (their stream entries are long trimmed or acknowledged).
    @discardableResult
    func forgetConsumedEvents(olderThan age: Duration) async throws -> Int {
        try await postgres.execute(
            "DELETE FROM notifications.consumed_events WHERE consumed_at < now() - make_interval(secs => $1)",
            [Int64(age.components.seconds)])
    }

    private static let markConsumed = """
        INSERT INTO notifications.consumed_events (key) VALUES ($1) ON CONFLICT (key) DO NOTHING RETURNING 1
        """

    private static let insert = """
        INSERT INTO notifications.notifications
            (id, recipient_id, type, actor_id, tweet_id, conversation_id, key, created_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        ON CONFLICT (recipient_id, key) DO NOTHING
        RETURNING \(NotificationRow.columns)
        """

    private static let deleteKeys = """
        DELETE FROM notifications.notifications WHERE recipient_id = $1 AND key = ANY($2) RETURNING id
        """

    private static let deletePrefix = """
        DELETE FROM notifications.notifications
        WHERE recipient_id = $1 AND key >= $2::text AND key < $2::text || '~'
        RETURNING id
        """
}
