import AviaryAPI
import EventStreams
import Logging
import RPC
import ServiceKit

/// The accounts service as tweets needs it: summaries of the users tweets show, and the users that
/// `@mentions` name.
struct Accounts: Sendable {
    let resources: ServiceResources
    /// This process's copy of the summaries of users who posted lately, if it keeps one.
    let users: LocalCopy<UserSummary>?

    /// At most this many users are mentioned by one tweet (the first that exist); the rest stay
    /// plain text.
    static let mentionLimit = 10

    /// The summaries of `ids` by id, from one `auth.getUsers` call (one per 1,000 users, at once,
    /// for a page of tweets naming more); unknown ids are left out.
    func summaries(_ ids: some Collection<Int64>, context: RPCContext?) async throws -> [Int64: UserSummary] {
        let found = try await inBatches(Array(Set(ids)), of: UserSummary.lookupLimit) { batch in
            try await call(GetUsersParams(ids: batch.map(EntityID.init)), context: context)
        }
        return Dictionary(found.map { ($0.id.value, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The summary of `author`, for a tweet they post: from this process's copy when it holds it,
    /// else from one `auth.getUsers` call (then held). Nil for an unknown user. The epoch is for
    /// ``isCurrent(_:)``.
    func author(_ author: Int64, context: RPCContext?) async throws
        -> (summary: UserSummary?, epoch: LocalCopy<UserSummary>.Epoch?)
    {
        let (held, epoch) = users?.values([author]) ?? ([:], nil)
        if let summary = held[author] { return (summary, epoch) }
        let summary = try await summaries([author], context: context)[author]
        if let summary { users?.keep([(key: author, value: summary)], since: epoch) }
        return (summary, epoch)
    }

    /// Whether no profile change was announced since `epoch` (of ``author(_:context:)``), so that what
    /// was built from that summary may be cached. True when the process keeps no copy (its epoch is
    /// nil then, as while the copy is not trusted): the summary came from auth just now.
    func isCurrent(_ epoch: LocalCopy<UserSummary>.Epoch?) -> Bool {
        guard let users, let epoch else { return true }
        return users.isCurrent(epoch)
    }

    /// The first ``mentionLimit`` users named by `usernames` (lower-case, without `@`) that exist,
    /// in that order: names nobody has neither count nor crowd out real ones. One `auth.getUsers`
    /// call for all the names (a tweet's 280 characters hold at most 70).
    func users(named usernames: [String], context: RPCContext?) async throws -> [UserSummary] {
        guard !usernames.isEmpty else { return [] }
        let found = try await call(GetUsersParams(usernames: usernames), context: context)
        return Array(found.prefix(Self.mentionLimit))
    }

    private func call(_ params: GetUsersParams, context: RPCContext?) async throws -> [UserSummary] {
        try await resources.peers.auth.getUsers(params, context: context, passing: ["not_found"])
    }
}
