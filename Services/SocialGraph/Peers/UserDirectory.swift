import AviaryAPI
import Logging
import RPC
import ServiceKit

/// The accounts service as the graph needs it: whether a user exists (`auth.getUsers`), and the
/// full `User`s of a page (`auth.getProfiles`: one call per page, never one per user).
struct UserDirectory: Sendable {
    let resources: ServiceResources
    let known = KnownUsers()

    /// Whether the accounts service knows `user`.
    func exists(_ user: Int64, context: RPCContext) async throws -> Bool {
        if known.contains(user) { return true }
        let found = try await resources.peers.auth.getUsers(GetUsersParams(ids: [EntityID(user)]), context: context)
        known.insert(found.map(\.id.value))
        return found.contains { $0.id.value == user }
    }

    /// The full `User`s of `ids`, in that order, relative to `viewer`; unknown ids are left out.
    func users(_ ids: [Int64], viewer: Int64?, context: RPCContext) async throws -> [User] {
        guard !ids.isEmpty else { return [] }
        let users = try await resources.peers.auth.getProfiles(
            GetProfilesParams(ids: ids.map { EntityID($0) }, viewerId: viewer.map { EntityID($0) }),
            context: context)
        known.insert(users.map(\.id.value))
        return users
    }
}
