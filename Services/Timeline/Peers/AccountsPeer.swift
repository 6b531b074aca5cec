import AviaryAPI
import RPC
import ServiceKit

/// The accounts service, asked only whether a user exists (when a user timeline turns out empty).
struct AccountsPeer: Sendable {
    let resources: ServiceResources

    private struct GetUsers: Encodable, Sendable {
        var ids: [EntityID]
    }

    private struct Summary: Decodable, Sendable {
        var id: EntityID
    }

    func exists(_ user: Int64, context: RPCContext?) async throws -> Bool {
        let found: [Summary] = try await resources.callPeer(
            .auth, "auth.getUsers", params: GetUsers(ids: [EntityID(user)]), context: context)
        return found.contains { $0.id.value == user }
    }
}
