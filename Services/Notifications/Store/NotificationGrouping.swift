/// Pages of grouped notifications: likes of one tweet, and follows, whose ids fall in the same
/// window of time (`window`, aligned on multiples of it since 1970) make one item; every other
/// notification is an item of its own.
///
/// Windows are read newest first, and one is only grouped once all its rows are read, so a group is
/// never split across pages; a page's cursor is the newest id of its last item, and the next page
/// reads from the end of that item's window to see whole groups, then keeps the older items.
struct NotificationGrouping: Sendable {
    /// One item of a grouped page: its rows, newest first.
    struct Group: Sendable {
        var rows: [NotificationRow]
        var newest: NotificationRow { rows[0] }
    }

    let store: NotificationStore
    /// The window in milliseconds.
    let window: Int64
    /// Rows read per query.
    var chunk = 500

    /// The items of `recipient` older than `before`, newest first; `hasMore` when more follow.
    func page(of recipient: Int64, before: Int64?, kinds: [NotificationKind], limit: Int) async throws
        -> (groups: [Group], hasMore: Bool)
    {
        var upper = before.map { windowEnd(of: $0) }
        var rows: [NotificationRow] = []
        while true {
            let fetched = try await store.page(of: recipient, before: upper, kinds: kinds, limit: chunk)
            rows += fetched
            let exhausted = fetched.count < chunk
            // Windows newer than the one of the oldest row read are complete; all are at the end.
            let completeFrom = exhausted ? Int64.min : windowEnd(of: rows[rows.count - 1].id)
            let groups = Self.groups(of: rows.filter { $0.id >= completeFrom }, window: window)
                .filter { before == nil || $0.newest.id < before! }
            if exhausted || groups.count > limit {
                return (Array(groups.prefix(limit)), groups.count > limit)
            }
            upper = rows[rows.count - 1].id
        }
    }

    /// The first id after the window of `id`.
    private func windowEnd(of id: Int64) -> Int64 {
        let milliseconds = id >> 22
        let end = (milliseconds / window + 1) * window
        return end >= (Int64.max >> 22) ? .max : end << 22
    }

    /// Groups rows (newest first) into items, newest item first.
    static func groups(of rows: [NotificationRow], window: Int64) -> [Group] {
        struct Key: Hashable {
            var kind: NotificationKind
            var tweet: Int64
            var window: Int64
        }
        var groups: [Group] = []
        var index: [Key: Int] = [:]
        for row in rows {
            guard row.kind.isGroupable else {
                groups.append(Group(rows: [row]))
                continue
            }
            let key = Key(kind: row.kind, tweet: row.tweet ?? 0, window: (row.id >> 22) / window)
            if let position = index[key] {
                groups[position].rows.append(row)
            } else {
                index[key] = groups.count
                groups.append(Group(rows: [row]))
            }
        }
        return groups
    }
}
