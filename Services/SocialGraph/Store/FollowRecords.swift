import EventStreams

/// A user as a process holds them: their totals and, once they were read as a viewer, whom they
/// follow and who follows them, while both are few.
struct FollowRecord: Sendable {
    var totals: FollowTotals
    var relations: Relations

    enum Relations: Sendable {
        /// Read for their totals only.
        case unread
        /// They follow, or are followed by, more users than a record lists.
        case unlisted
        /// Both sorted.
        case listed(followees: [Int64], followers: [Int64])
    }
}

/// Users' totals and relations for `graph.statsMany`, which every profile read asks for.
///
/// Postgres has them (``FollowStore/records(of:viewer:listing:)``), and this process holds those it
/// read lately (``LocalCopy``, kind `follows`), so that viewing a profile again costs no query. A
/// viewer's record lists whom they follow and who follows them while each is at most
/// `listedRelations`: that answers `isFollowed` and `followsYou` for any profile they view. Only for a
/// viewer with more are the relations looked up.
///
/// A follow or unfollow drops both users' records from its own process once it has committed, and
/// marks its writer, whose own reads skip every process's copy until the others surely heard of it
/// (``changed(_:by:)``); the outbox relay announces both users with its event (``changedBy``,
/// ``EventStreams/LocalCopyKind/announcer(_:redis:)``), which drops them from every other process a
/// moment later.
struct FollowRecords: Sendable {
    let store: FollowStore
    /// This process's copy of the records read lately, if it keeps one.
    let local: LocalCopy<FollowRecord>?

    static let listedRelations = 100

    /// The totals of `users`, and with a `viewer` their relations to the viewer (false without one).
    func summaries(of users: [Int64], viewer: Int64?) async throws -> [Int64: FollowSummary] {
        // Without a copy to keep them in, the lists would cost more than they spare.
        guard let local else { return try await store.summaries(of: users, viewer: viewer) }
        let wanted = viewer.map { users + [$0] } ?? users
        var (records, epoch) = await local.values(wanted, viewer: viewer)
        // A user held for their totals only is read again as the viewer, relations and all.
        func isMissing(_ user: Int64) -> Bool {
            guard let record = records[user] else { return true }
            if user == viewer, case .unread = record.relations { return true }
            return false
        }
        let asked = Set(wanted.filter(isMissing))
        if !asked.isEmpty {
            let fetched = try await store.records(of: Array(asked), viewer: viewer, listing: Self.listedRelations)
            local.keep(fetched.lazy.map { (key: $0.key, value: $0.value) }, since: epoch)
            records.merge(fetched) { _, new in new }
        }
        var summaries = users.reduce(into: [Int64: FollowSummary]()) { summaries, user in
            summaries[user] = FollowSummary(totals: records[user]?.totals ?? .zero, isFollowed: false, followsYou: false)
        }
        guard let viewer else { return summaries }
        let others = users.filter { $0 != viewer }
        if case .listed(let followees, let followers) = records[viewer]?.relations {
            for user in others {
                summaries[user]?.isFollowed = followees.sortedContains(user)
                summaries[user]?.followsYou = followers.sortedContains(user)
            }
        } else if !others.isEmpty {
            let relations = try await store.relationships(of: viewer, to: others)
            for user in others {
                summaries[user]?.isFollowed = relations.followed.contains(user)
                summaries[user]?.followsYou = relations.followers.contains(user)
            }
        }
        return summaries
    }

    /// Drops `users`' records, which `writer` changed, from this process and marks the writer: call
    /// after a follow, unfollow or block commits, before answering.
    func changed(_ users: [Int64], by writer: Int64) async {
        await local?.changed(users, by: writer)
    }

    /// The payload fields of the graph's events that name users whose records they change.
    static let changedBy = ["follow": ["followerId", "followeeId"], "unfollow": ["followerId", "followeeId"]]
}

extension LocalCopyKind {
    /// Users' totals and relations (``FollowRecords``): the outbox relay announces both users of
    /// every follow and unfollow (``FollowRecords/changedBy``).
    static let follows = LocalCopyKind(service: "graph", name: "follows", channelPrefix: "aviary:graph:forget-follows")
}

extension [Int64] {
    /// Whether this sorted array holds `value` (a binary search).
    fileprivate func sortedContains(_ value: Int64) -> Bool {
        var (low, high) = (startIndex, endIndex)
        while low < high {
            let middle = (low + high) / 2
            if self[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low < endIndex && self[low] == value
    }
}
