import AviaryAPI
import RPC

extension NotificationsService {
    @Sendable func unreadCount(_ params: Empty, _ context: RPCContext) async throws -> UnreadCount {
        UnreadCount(count: try await store.unreadCount(of: try context.requireUser()))
    }

    @Sendable func markRead(_ params: MarkNotificationsReadParams, _ context: RPCContext) async throws -> UnreadCount {
        UnreadCount(count: try await store.markRead(of: try context.requireUser(), upTo: params.upTo?.value))
    }

    @Sendable func dismiss(_ params: NotificationParams, _ context: RPCContext) async throws -> Empty {
        guard try await store.delete(of: try context.requireUser(), id: params.notificationId.value) > 0 else {
            throw RPCError.notFound("the caller has no notification \(params.notificationId)")
        }
        return Empty()
    }

    @Sendable func clear(_ params: Empty, _ context: RPCContext) async throws -> Empty {
        try await store.delete(of: try context.requireUser(), id: nil)
        return Empty()
    }
}
