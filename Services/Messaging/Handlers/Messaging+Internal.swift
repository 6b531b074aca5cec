import AviaryAPI
import RPC

extension MessagingService {
    /// For the media service: whether a user may upload to or read the media of a conversation.
    @Sendable func isMember(_ params: IsMemberParams, _ context: RPCContext) async throws -> MembershipResult {
        MembershipResult(member: try await conversations.isMember(params.conversationId.value, user: params.userId.value))
    }

    @Sendable func reportable(_ params: ReportableParams, _ context: RPCContext) async throws -> [Message] {
        let ids = try params.messageIds.values(atMost: ModerationAPI.reportedItemsLimit, field: "messageIds")
        let rows = try await messages.reportable(ids, sender: params.senderId.value, reporter: params.reporterId.value)
        let summaries = try await directory.summaries([params.senderId.value], context: context)
        return rows.map { Self.message($0, summaries: summaries, markers: [], viewer: nil) }
    }
}
