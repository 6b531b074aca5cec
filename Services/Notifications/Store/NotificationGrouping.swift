import AviaryAPI
import Postgres

/// Pages of grouped notifications: likes of one tweet, and follows, whose ids fall in the same
/// window of time (`window`, aligned on multiples of it since the id epoch, a UTC midnight) make
/// one item; every other
/// notification is an item of its own.
///
/// Postgres groups the rows of whole windows, so a group is never split across pages and the
/// service holds only a page's items, however many rows a group has (a viral tweet's likes). A
/// page's cursor is the newest id of its last item, and the next page starts at the end of that
/// item's window, keeping the items older than the cursor. How far back a read goes: the windows
/// from that of the row `depth` rows down hold at least `depth` rows, so at least one item; a page
/// still short of items reads the windows before, with `depth` doubled.
struct NotificationGrouping: Sendable {
    /// One item of a grouped page.
    struct Group: Sendable {
        /// Its newest notification, which the item shows.
        var newest: NotificationRow
        /// How many notifications it groups.
        var count: Int
        /// Whether all of them are read.
        var read: Bool
        /// The actors of its newest notifications, newest first, repeats included (at most `actorsKept`).
        var actors: [Int64]

        /// The item of a notification that is not grouped.
        init(_ row: NotificationRow) {
            self.init(newest: row, count: 1, read: row.read, actors: [row.actor])
        }

        init(newest: NotificationRow, count: Int, read: Bool, actors: [Int64]) {
            self.newest = newest
            self.count = count
            self.read = read
            self.actors = actors
        }
    }

    /// Actors kept per group: enough to find the three distinct ones an item shows, unless one
    /// actor's notifications follow each other many times (then the item shows fewer).
    static let actorsKept = 10

    let store: NotificationStore
    /// The window in milliseconds.
    let window: Int64

    /// The items of `recipient` older than `before`, newest first; `hasMore` when more follow.
    func page(of recipient: Int64, before: Int64?, kinds: [NotificationKind], limit: Int) async throws
        -> (groups: [Group], hasMore: Bool)
    {
        let kinds = kinds.map(\.rawValue)
        var upper = before.map { windowEnd(of: $0) } ?? .max
        var depth = limit + 1
        var groups: [Group] = []
        while true {
            let deepest = try await store.postgres.query(
                """
                SELECT id FROM notifications.notifications
                WHERE recipient_id = $1 AND id < $2 AND type = ANY($3)
                ORDER BY id DESC OFFSET $4 LIMIT 1
                """, [recipient, upper, kinds, Int64(depth - 1)]
            ).first?.decode(Int64.self, at: 0)
            let lower = deepest.map { windowStart(of: $0) } ?? .min
            let read = try await store.postgres.query(
                Self.groupsBetween, [recipient, lower, upper, kinds, window, Int64(Self.actorsKept), Self.groupableKinds]
            ).map { row in
                Group(
                    newest: try NotificationRow(row: row), count: Int(try row.decode(Int64.self, at: 8)),
                    read: try row.decode(Bool.self, at: 9), actors: try row.decode([Int64].self, at: 10))
            }
            groups += read.filter { before == nil || $0.newest.id < before! }
            if deepest == nil || groups.count > limit {
                return (Array(groups.prefix(limit)), groups.count > limit)
            }
            upper = lower
            depth *= 2
        }
    }

    /// `$1`'s items of types `$4` with ids in [`$2`, `$3`) (whole windows of `$5` ms), newest first:
    /// each as its newest row's columns, then its count, whether all is read, and its newest `$6`
    /// actors. The kinds grouped are `$7`, ``groupableKinds``.
    static let groupsBetween = """
        WITH grouped AS (
            SELECT max(id) AS newest, count(*) AS total, bool_and(read) AS all_read,
                (array_agg(actor_id ORDER BY id DESC))[1:$6::int] AS actor_ids
            FROM notifications.notifications
            WHERE recipient_id = $1 AND id >= $2 AND id < $3 AND type = ANY($4)
            GROUP BY type, tweet_id, CASE WHEN type = ANY($7) THEN (id >> 22) / $5 ELSE id END
        )
        SELECT \(NotificationRow.columns), total, all_read, actor_ids
        FROM grouped JOIN notifications.notifications ON id = newest
        ORDER BY id DESC
        """

    /// The kinds whose notifications of one window are grouped (``NotificationKind/isGroupable``).
    static let groupableKinds = NotificationKind.allCases.filter(\.isGroupable).map(\.rawValue)

    /// The first id of the window of `id`.
    private func windowStart(of id: Int64) -> Int64 {
        ((id >> 22) / window * window) << 22
    }

    /// The first id after the window of `id`.
    private func windowEnd(of id: Int64) -> Int64 {
        let milliseconds = id >> 22
        let end = (milliseconds / window + 1) * window
        return end >= (Int64.max >> 22) ? .max : end << 22
    }
}
