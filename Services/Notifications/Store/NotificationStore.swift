import AviaryAPI
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

        /// Whose notifications it changes.
        var recipient: Int64 {
            switch self {
            case .add(let new): new.recipient
            case .withdraw(let recipient, _), .withdrawPrefix(let recipient, _): recipient
            }
        }
    }

    /// The deduplication key of one recipient's changes from the event whose key is `event`:
    /// `<event>>recipient`. One such change applied, it is skipped the next time, as are all of an
    /// event that was applied whole under its own key (before notifications were partitioned).
    static func recipientKey(_ event: String, _ recipient: Int64) -> String {
        "\(event)>\(recipient)"
    }

    /// What a batch changed: the notifications it made and the ones it withdrew (id, recipient).
    struct Outcome: Sendable {
        var added: [NotificationRow] = []
        var withdrawn: [(id: Int64, recipient: Int64)] = []
    }

    /// Applies each event's changes unless the event was applied before (by its deduplication key,
    /// or its whole event's: ``recipientKey(_:_:)``),
    /// all in one transaction, in a few statements however long the batch: one marks every event
    /// consumed, then each run of like changes (adds, withdrawals) is one statement, in event order.
    func apply(_ events: [(key: String, changes: [Change])]) async throws -> Outcome {
        let ids = self.ids
        let keys = Array(Set(events.map(\.key)))
        return try await postgres.transaction { connection in
            var fresh = Set(try await connection.query(Self.markConsumed, [keys]).map { try $0.decode(String.self, at: 0) })
            // An event delivered twice in one batch counts once, like one delivered again later.
            let changes = events.filter { fresh.remove($0.key) != nil }.flatMap(\.changes)
            // Ids are drawn below, under the locks of their recipients: a recipient's notifications
            // then commit in the order of their ids (a batch of another topic that drew an id first
            // has committed before this one draws), so a subscriber that reconnects after the last
            // id it saw misses none. Unlocked, a lower id could commit after a higher one was pushed.
            let recipients = Set(changes.compactMap { if case .add(let new) = $0 { new.recipient } else { nil } })
            if !recipients.isEmpty {
                let keys = recipients.map { AdvisoryLockKey.of("aviary.notifications.recipient:\($0)") }
                _ = try await connection.query(Self.lockRecipients, [Array(Set(keys)).sorted()])
            }
            var outcome = Outcome()
            var rest = changes[...]
            while let first = rest.first {
                switch first {
                case .add:
                    let run = rest.prefix { if case .add = $0 { true } else { false } }
                    rest = rest.dropFirst(run.count)
                    let new = run.compactMap { if case .add(let new) = $0 { new } else { nil } }
                    outcome.added += try await Self.insert(new, ids: ids, on: connection)
                case .withdraw:
                    let run = rest.prefix { if case .withdraw = $0 { true } else { false } }
                    rest = rest.dropFirst(run.count)
                    var recipients: [Int64] = []
                    var keys: [String] = []
                    for case .withdraw(let recipient, let withdrawn) in run {
                        recipients += Array(repeating: recipient, count: withdrawn.count)
                        keys += withdrawn
                    }
                    let rows = try await connection.query(Self.deleteKeys, [recipients, keys])
                    outcome.withdrawn += try rows.map { (try $0.decode(Int64.self, at: 0), try $0.decode(Int64.self, at: 1)) }
                case .withdrawPrefix(let recipient, let prefix):
                    rest = rest.dropFirst()
                    let rows = try await connection.query(Self.deletePrefix, [recipient, prefix])
                    outcome.withdrawn += try rows.map { (try $0.decode(Int64.self, at: 0), recipient) }
                }
            }
            return outcome
        }
    }

    /// Inserts `new` in one statement (one that is there already is skipped) and returns the rows
    /// made, in the order given (their ids rise with it).
    private static func insert(
        _ new: [NewNotification], ids: @Sendable () -> Int64, on connection: PostgresConnection
    ) async throws -> [NotificationRow] {
        let rows = try await connection.query(
            insertMany,
            [
                new.map { _ in ids() }, new.map(\.recipient), new.map(\.kind.rawValue), new.map(\.actor),
                new.map { $0.tweet ?? 0 }, new.map { $0.conversation ?? 0 }, new.map(\.key),
                new.map { Int64(($0.createdAt.timeIntervalSince1970 * 1_000_000).rounded()) },
            ])
        return try rows.map { try NotificationRow(row: $0) }.sorted { $0.id < $1.id }
    }

    /// Forgets applied events older than `age` (their stream entries are long trimmed or acknowledged).
    @discardableResult
    func forgetConsumedEvents(olderThan age: Duration) async throws -> Int {
        try await postgres.execute(
            "DELETE FROM notifications.consumed_events WHERE consumed_at < now() - make_interval(secs => $1)",
            [Int64(age.components.seconds)])
    }

    /// Takes the transaction's locks of `$1`, the recipients' keys in ascending order, one after
    /// another in that order, so that two batches never wait on each other in a cycle.
    private static let lockRecipients = "SELECT pg_advisory_xact_lock(key) FROM unnest($1::bigint[]) WITH ORDINALITY AS keys (key, n) ORDER BY n"

    /// The keys of the events not consumed before, now marked.
    private static let markConsumed = """
        INSERT INTO notifications.consumed_events (key)
        SELECT key FROM unnest($1::text[]) AS given (key)
        WHERE NOT EXISTS (SELECT FROM notifications.consumed_events AS whole WHERE whole.key = split_part(given.key, '>', 1))
        ON CONFLICT (key) DO NOTHING RETURNING key
        """

    /// Rows by column; 0 stands for no tweet or conversation (ids are positive), times are
    /// microseconds since 1970.
    /// Each notification made is queued for its recipient's Web Push subscriptions of its kind
    /// (``PushDelivery``), in the same statement: a push is never lost to a crash, nor sent for a
    /// notification that was not kept.
    private static let insertMany = """
        WITH added AS (
            INSERT INTO notifications.notifications
                (id, recipient_id, type, actor_id, tweet_id, conversation_id, key, created_at)
            SELECT id, recipient, kind, actor, nullif(tweet, 0), nullif(conversation, 0), key,
                timestamptz 'epoch' + micros * interval '1 microsecond'
            FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::text[], $8::bigint[])
                AS new (id, recipient, kind, actor, tweet, conversation, key, micros)
            ON CONFLICT (recipient_id, key) DO NOTHING
            RETURNING \(NotificationRow.columns)
        ), pushed AS (
            INSERT INTO notifications.push_queue (subscription_id, notification_id)
            SELECT s.id, added.id FROM added
            JOIN notifications.push_subscriptions AS s ON s.user_id = added.recipient_id AND added.type = ANY(s.kinds)
            WHERE s.policy <> 'none'
        )
        SELECT * FROM added
        """

    /// Pairs of recipient and key, by column.
    private static let deleteKeys = """
        DELETE FROM notifications.notifications AS n
        USING unnest($1::bigint[], $2::text[]) AS gone (recipient, key)
        WHERE n.recipient_id = gone.recipient AND n.key = gone.key
        RETURNING n.id, n.recipient_id
        """

    private static let deletePrefix = """
        DELETE FROM notifications.notifications
        WHERE recipient_id = $1 AND key >= $2::text AND key < $2::text || '~'
        RETURNING id
        """

    /// Deletes every notification `user` received or caused, whose account was deleted.
    func erase(user: Int64) async throws {
        try await postgres.execute(
            "DELETE FROM notifications.notifications WHERE recipient_id = $1 OR actor_id = $1", [user])
    }
}
