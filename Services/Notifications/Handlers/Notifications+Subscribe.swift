import AviaryAPI
import AviaryJSON
import Logging
import RPC
import ServiceKit

extension NotificationsService {
    /// The most notifications a reconnecting subscriber is sent to catch up before being told to resync.
    static let catchUpLimit = 1000

    @Sendable func subscribe(_ params: NotificationSubscribeParams, _ context: RPCContext) async throws -> SubscriptionResult {
        let principal = try context.requirePrincipal()
        let user = principal.userID
        guard let connection = context.connection else {
            throw RPCError.validation("subscriptions need a connection of their own", field: "subscription")
        }
        // With lastId, live events are held from now on, so the catch-up read misses none: every
        // notification is either stored before the read or published after the hold began.
        guard let id = try await feed.hub.subscribe(principal, connection: connection, holding: params.lastId != nil) else {
            throw RPCError.unavailable("the connection closed")
        }
        if let lastSeen = params.lastId?.value {
            // Off the request, so the response (the subscription id) goes out before the catch-up,
            // which takes at least a database round trip.
            let logger = context.logger
            Task(executorPreference: EventLoopTaskExecutor.current) { await catchUp(id, user: user, after: lastSeen, connection: connection, logger: logger) }
        }
        return SubscriptionResult(subscription: id)
    }

    /// Sends a held subscription the notifications after `lastSeen`, oldest first, then what was held
    /// meanwhile (or is published a moment later) that the catch-up did not already send. A failed
    /// read sends a resync notice instead.
    private func catchUp(_ id: String, user: Int64, after lastSeen: Int64, connection: RPCConnection, logger: Logger) async {
        var replay: [RawJSON] = []
        var replayed = Set<Int64>()
        do {
            let rows = try await store.after(lastSeen, of: user, limit: Self.catchUpLimit + 1)
            let shown = Array(rows.prefix(Self.catchUpLimit))
            let missed = try await hydrator.items(shown, viewer: user, context: nil)
            replay = try missed.map(NotificationFeed.event)
            replayed = Set(shown.map(\.id))
            if rows.count > Self.catchUpLimit { replay.append(NotificationFeed.resync) }
        } catch {
            logger.warning("a subscriber's catch-up failed; it is told to resync", metadata: ["error": "\(String(reflecting: error))"])
            replay = [NotificationFeed.resync]
        }
        feed.hub.release(id, user: user, connection: connection, replay: replay) { [replayed] event in
            // A notification the catch-up already sent is dropped, whether it was held or is
            // published late; other events pass. By id, not by order: two instances store
            // notifications concurrently, so a lower id may be committed after a higher one.
            guard let live = NotificationFeed.notificationID(of: event) else { return true }
            return !replayed.contains(live)
        }
    }

    @Sendable func unsubscribe(_ params: UnsubscribeParams, _ context: RPCContext) async throws -> Empty {
        try feed.hub.unsubscribe(params.subscription, context: context)
        return Empty()
    }
}
