import AviaryAPI
import RPC
import ServiceKit

/// The accounts service, asked only whether a user exists (when a user timeline turns out empty).
struct AccountsPeer: Sendable {
    let resources: ServiceResources

    func exists(_ user: Int64, context: RPCContext?) async throws -> Bool {
        let found = try await resources.peers.auth.getUsers(GetUsersParams(ids: [EntityID(user)]), context: context)
        return found.contains { $0.id.value == user }
    }
}
