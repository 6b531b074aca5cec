import AviaryAPI
import RPC
import ServiceKit

/// The accounts service, asked only whether users exist (when user timelines turn out empty).
struct AccountsPeer: Sendable {
    let resources: ServiceResources
    /// `auth.getUsers` takes at most this many ids.
    static let usersPerCall = 1000

    func exists(_ user: Int64, context: RPCContext?) async throws -> Bool {
        try await existing([user], context: context).contains(user)
    }

    /// Those of `users` that exist, in one call per thousand.
    func existing(_ users: [Int64], context: RPCContext?) async throws -> Set<Int64> {
        let resources = resources
        let found = try await inBatches(users, of: Self.usersPerCall) { batch in
            try await resources.peers.auth.getUsers(GetUsersParams(ids: batch.map { EntityID($0) }), context: context)
        }
        return Set(found.map(\.id.value))
    }
}
