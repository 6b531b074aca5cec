import AviaryAPI
import Logging
import RPC
import ServiceKit

/// The accounts service as the graph needs it, through its internal `auth.getUsers`: whether a
/// user exists, and the full `User`s of a page (one call per page, never one per user).
struct UserDirectory: Sendable {
    let resources: ServiceResources
    let known = KnownUsers()

    /// Params of `auth.getUsers`; without `detail` it answers `UserSummary`s.
    private struct GetUsers: Encodable, Sendable {
        var ids: [EntityID]
        var viewerId: EntityID?
        var detail: String?
    }

    /// Whether the accounts service knows `user`.
    func exists(_ user: Int64, context: RPCContext) async throws -> Bool {
        if known.contains(user) { return true }
        let found = try await getUsers(GetUsers(ids: [EntityID(user)]), context: context, as: [UserSummary].self)
        known.insert(found.map(\.id.value))
        return found.contains { $0.id.value == user }
    }

    /// The full `User`s of `ids`, in that order, relative to `viewer`; unknown ids are left out.
    func users(_ ids: [Int64], viewer: Int64?, context: RPCContext) async throws -> [User] {
        guard !ids.isEmpty else { return [] }
        let request = GetUsers(ids: ids.map { EntityID($0) }, viewerId: viewer.map { EntityID($0) }, detail: "full")
        let users = try await getUsers(request, context: context, as: [User].self)
        known.insert(users.map(\.id.value))
        return users
    }

    private func getUsers<Result: Decodable>(_ request: GetUsers, context: RPCContext, as type: Result.Type) async throws -> Result {
        try await resources.callPeer(.auth, "auth.getUsers", params: request, context: context, as: type)
    }
}
