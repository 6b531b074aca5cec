import AviaryAPI
import RPC
import ServiceKit

/// Asks the messaging service whether a user belongs to a conversation (`messaging.isMember`).
struct Membership: Sendable {
    let resources: ServiceResources

    /// - Throws: `unavailable` when messaging cannot answer (down, or without the method yet).
    func isMember(user: Int64, of conversation: Int64, context: RPCContext) async throws -> Bool {
        do {
            return try await resources.client(for: .messaging).call(
                "messaging.isMember",
                params: MembershipQuery(conversationId: EntityID(conversation), userId: EntityID(user)),
                meta: resources.internalMeta(context), as: MembershipAnswer.self
            ).member
        } catch let error as RPCError where error.reason == "not_found" {
            return false
        } catch let error as RPCError where error.reason == "unavailable" || error.code == -32601 {
            throw RPCError.unavailable("conversation membership cannot be checked now: the messaging service is unavailable")
        }
    }
}
