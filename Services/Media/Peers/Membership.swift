import AviaryAPI
import RPC
import ServiceKit

/// Asks the messaging service whether a user belongs to a conversation (`messaging.isMember`).
struct Membership: Sendable {
    let resources: ServiceResources

    /// - Throws: `timeout` when the caller's deadline passes first; `unavailable` when messaging
    ///   cannot answer (down, without the method yet, or failing in a way the caller cannot act
    ///   on: its errors are about its own call, not the caller's).
    func isMember(user: Int64, of conversation: Int64, context: RPCContext) async throws -> Bool {
        do {
            return try await resources.peers.messaging.isMember(
                IsMemberParams(conversationId: EntityID(conversation), userId: EntityID(user)),
                context: context, passing: ["not_found"]
            ).member
        } catch let error as RPCError where error.reason == "not_found" {
            return false
        }
    }
}
