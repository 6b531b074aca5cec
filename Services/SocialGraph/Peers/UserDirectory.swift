import AviaryAPI
import EventStreams
import Logging
import RPC
import ServiceKit

/// The accounts service as the graph needs it: whether a user exists (`auth.getUsers`), and the
/// full `User`s of a page (`auth.getProfiles`: one call per page, never one per user).
///
/// The users auth confirmed lately are kept (``known``), so that following a popular user does not
/// ask it every time: only existence, never its absence (a new account must be followable at once).
/// An account's erasure announces it (``forget(_:)``), so that no process lets a follow of it
/// through afterwards.
struct UserDirectory: Sendable {
    let resources: ServiceResources
    let known: LocalCopy<Bool>

    init(resources: ServiceResources) {
        self.resources = resources
        known = LocalCopy(.knownUsers, redis: resources.redis, capacity: 100_000, lifetime: .seconds(300), logger: resources.logger)
    }

    /// Whether the accounts service knows `user`.
    func exists(_ user: Int64, context: RPCContext) async throws -> Bool {
        let (held, epoch) = known.values([user])
        if held[user] != nil { return true }
        let found = try await resources.peers.auth.getUsers(GetUsersParams(ids: [EntityID(user)]), context: context)
        known.keep(found.map { (key: $0.id.value, value: true) }, since: epoch)
        return found.contains { $0.id.value == user }
    }

    /// The full `User`s of `ids`, in that order, relative to `viewer`; unknown ids are left out.
    func users(_ ids: [Int64], viewer: Int64?, context: RPCContext) async throws -> [User] {
        guard !ids.isEmpty else { return [] }
        let epoch = known.values([]).epoch
        let users = try await resources.peers.auth.getProfiles(
            GetProfilesParams(ids: ids.map { EntityID($0) }, viewerId: viewer.map { EntityID($0) }),
            context: context)
        known.keep(users.map { (key: $0.id.value, value: true) }, since: epoch)
        return users
    }

    /// Tells every process that `users` exist no more: call when their accounts are erased.
    func forget(_ users: [Int64]) async throws {
        try await LocalCopyKind.knownUsers.announce(users, on: resources.redis)
    }
}

extension LocalCopyKind {
    /// The users social-graph's processes know exist (``UserDirectory``).
    static let knownUsers = LocalCopyKind(service: "graph", name: "known_users", channelPrefix: "aviary:graph:forget-users")
}
