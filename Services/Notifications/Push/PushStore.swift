import AviaryAPI
import Crypto
import Foundation
import Postgres
import ServiceKit

/// Web Push subscriptions, one per session, and the queue of pushes to send
/// (`notifications.push_subscriptions`, `notifications.push_queue`; the queue is written with the
/// notifications, ``NotificationStore``), and the server's VAPID key.
struct PushStore: Sendable {
    let postgres: PostgresClient

    /// A subscription as stored.
    struct Subscription: Sendable {
        var id: Int64
        var user: Int64
        var endpoint: String
        var p256dh: String
        var auth: String
        var kinds: [NotificationKind]
        var policy: PushPolicy
        var standard: Bool
        var clientToken: String?

        static let columns = "id, user_id, endpoint, p256dh, auth, kinds, policy, standard, client_token"
    }

    /// Makes `session`'s subscription, replacing the one it had (and its queued pushes).
    func set(_ subscription: Subscription, session: Int64) async throws -> Subscription {
        let rows = try await postgres.transaction { connection in
            try await connection.execute("DELETE FROM notifications.push_subscriptions WHERE session_id = $1", [session])
            return try await connection.query(
                """
                INSERT INTO notifications.push_subscriptions
                    (id, user_id, session_id, endpoint, p256dh, auth, kinds, policy, standard, client_token)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                RETURNING \(Subscription.columns)
                """,
                [
                    subscription.id, subscription.user, session, subscription.endpoint, subscription.p256dh, subscription.auth,
                    subscription.kinds.map(\.rawValue), subscription.policy, subscription.standard, subscription.clientToken,
                ])
        }
        return try Subscription(row: rows[0])
    }

    /// `session`'s subscription, if it has one.
    func subscription(of session: Int64) async throws -> Subscription? {
        try await postgres.query(
            "SELECT \(Subscription.columns) FROM notifications.push_subscriptions WHERE session_id = $1", [session]
        ).first.map { try Subscription(row: $0) }
    }

    /// Changes what is given of `session`'s subscription; nil when it has none.
    func update(session: Int64, kinds: [NotificationKind]?, policy: PushPolicy?) async throws -> Subscription? {
        try await postgres.query(
            """
            UPDATE notifications.push_subscriptions SET kinds = coalesce($2, kinds), policy = coalesce($3, policy)
            WHERE session_id = $1 RETURNING \(Subscription.columns)
            """, [session, kinds?.map(\.rawValue), policy]
        ).first.map { try Subscription(row: $0) }
    }

    func delete(session: Int64) async throws {
        try await delete(sessions: [session])
    }

    func delete(sessions: [Int64]) async throws {
        try await postgres.execute("DELETE FROM notifications.push_subscriptions WHERE session_id = ANY($1::bigint[])", [sessions])
    }

    func delete(subscription id: Int64) async throws {
        try await postgres.execute("DELETE FROM notifications.push_subscriptions WHERE id = $1", [id])
    }

    /// Deletes the subscriptions of a deleted account (their queued pushes with them).
    func erase(user: Int64) async throws {
        try await postgres.execute("DELETE FROM notifications.push_subscriptions WHERE user_id = $1", [user])
    }

    /// A queued push, claimed: its subscription and the notification it tells of (nil when that
    /// notification was withdrawn since).
    struct Claimed: Sendable {
        var id: Int64
        var attempts: Int
        var subscription: Subscription
        var notification: NotificationRow?
    }

    /// Claims up to `limit` due pushes for `lease` (another instance takes them after it, should
    /// this one die sending), counting the attempt.
    func claim(limit: Int, lease: Duration) async throws -> [Claimed] {
        let rows = try await postgres.query(Self.claimDue, [limit, Int64(lease.components.seconds)])
        return try rows.map { row in
            let notification = try row.decode(Int64?.self, at: 11) == nil ? nil : try NotificationRow(row: row, at: 11)
            return Claimed(
                id: try row.decode(Int64.self, at: 0), attempts: Int(try row.decode(Int32.self, at: 1)),
                subscription: try Subscription(row: row, at: 2), notification: notification)
        }
    }

    private static let claimDue = """
        WITH claimed AS (
            UPDATE notifications.push_queue SET attempts = attempts + 1, due_at = now() + make_interval(secs => $2)
            WHERE id IN (
                SELECT id FROM notifications.push_queue WHERE due_at <= now() ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
            RETURNING id, attempts, subscription_id, notification_id
        )
        SELECT c.id, c.attempts, \(qualifiedColumns(Subscription.columns, by: "s")),
            \(qualifiedColumns(NotificationRow.columns, by: "n"))
        FROM claimed AS c
        JOIN notifications.push_subscriptions AS s ON s.id = c.subscription_id
        LEFT JOIN notifications.notifications AS n ON n.id = c.notification_id
        ORDER BY c.id
        """

    /// A push sent, or given up on.
    func finish(_ id: Int64) async throws {
        try await postgres.execute("DELETE FROM notifications.push_queue WHERE id = $1", [id])
    }

    /// Tries `id` again after `delay`.
    func retry(_ id: Int64, after delay: Duration) async throws {
        try await postgres.execute(
            "UPDATE notifications.push_queue SET due_at = now() + make_interval(secs => $2) WHERE id = $1",
            [id, Int64(delay.components.seconds)])
    }

    /// The server's VAPID key: the one stored, or a new one stored by the first instance to ask.
    func vapidKey(contact: String) async throws -> VAPIDKey {
        let made = P256.Signing.PrivateKey()
        try await postgres.execute(
            "INSERT INTO notifications.push_key (private_key) VALUES ($1) ON CONFLICT DO NOTHING", [made.rawRepresentation.base64URLEncoded])
        let stored = try await postgres.query("SELECT private_key FROM notifications.push_key", [])[0].decode(String.self, at: 0)
        // Not base64url: no bytes, which the key refuses (a wrong size).
        return VAPIDKey(key: try P256.Signing.PrivateKey(rawRepresentation: Data(base64URLEncoded: stored) ?? Data()), contact: contact)
    }
}

extension PushPolicy: PostgresEncodable, PostgresDecodable {}

extension PushStore.Subscription {
    /// The row's ``columns`` from column `first` on.
    init(row: PostgresRow, at first: Int = 0) throws {
        id = try row.decode(Int64.self, at: first)
        user = try row.decode(Int64.self, at: first + 1)
        endpoint = try row.decode(String.self, at: first + 2)
        p256dh = try row.decode(String.self, at: first + 3)
        auth = try row.decode(String.self, at: first + 4)
        kinds = try row.decode([String].self, at: first + 5).compactMap(NotificationKind.init(rawValue:))
        policy = try row.decode(PushPolicy.self, at: first + 6)
        standard = try row.decode(Bool.self, at: first + 7)
        clientToken = try row.decode(String?.self, at: first + 8)
    }
}
