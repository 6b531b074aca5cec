import AviaryAPI
import RPC

extension NotificationsService {
    @Sendable func unreadCount(_ params: Empty, _ context: RPCContext) async throws -> UnreadCount {
        UnreadCount(count: try await store.unreadCount(of: try context.requireUser()))
    }

    @Sendable func markRead(_ params: MarkNotificationsReadParams, _ context: RPCContext) async throws -> UnreadCount {
        UnreadCount(count: try await store.markRead(of: try context.requireUser(), upTo: params.upTo?.value))
    }
}
