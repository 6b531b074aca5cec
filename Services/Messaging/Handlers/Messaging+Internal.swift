import AviaryAPI
import RPC

extension MessagingService {
    /// For the media service: whether a user may upload to or read the media of a conversation.
    @Sendable func isMember(_ params: IsMemberParams, _ context: RPCContext) async throws -> MembershipResult {
        MembershipResult(member: try await conversations.isMember(params.conversationId.value, user: params.userId.value))
    }
}
