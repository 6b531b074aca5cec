import AviaryAPI
import RPC
import ServiceKit

/// The notifications service: an activity feed made from other services' events, stored in its own
/// tables and pushed live to subscribers on every instance.
struct NotificationsService: Sendable {
    let resources: ServiceResources
    let store: NotificationStore
    let hydrator: NotificationHydrator
    let feed: NotificationFeed
    /// The grouping window of `list {grouped: true}`, in milliseconds.
    let groupWindow: Int64

    init(resources: ServiceResources) {
        self.resources = resources
        let ids = resources.ids
        store = NotificationStore(postgres: resources.postgres, ids: { ids.next() })
        hydrator = NotificationHydrator(resources: resources)
        feed = NotificationFeed(hub: resources.liveHub, hydrator: hydrator)
        groupWindow = Int64(
            (try? resources.configuration.integer(
                "AVIARY_NOTIFICATIONS_GROUP_WINDOW_SECONDS", default: 86_400, in: 1...31_536_000)) ?? 86_400) * 1000
    }

    /// `ServiceDefinition.register`: builds the service from the runtime's resources and registers its methods.
    static func register(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        // Read once here so that a bad value stops the start with its message.
        _ = try resources.configuration.integer(
            "AVIARY_NOTIFICATIONS_GROUP_WINDOW_SECONDS", default: 86_400, in: 1...31_536_000)
        let service = NotificationsService(resources: resources)
        let sweeper = ConsumedEventSweeper(store: service.store, logger: resources.logger)
        resources.addBackgroundService(PeriodicJob(every: ConsumedEventSweeper.interval, sweeper.sweep))
        service.registerMethods(with: &router)
        for consumer in NotificationConsumers.definitions(service) { resources.consume(consumer) }
    }

    func registerMethods(with router: inout RPCRouter) {
        router.register(
            "notifications.list",
            summary: """
                Page of the caller's notifications, newest first (limit default 20, at most 100). types keeps only \
                those kinds (follow, like, reply, mention, message). With grouped: true, likes of the same tweet and \
                follows received in the same window (a day by default) make one item whose count says how many \
                notifications it stands for and whose actors lists up to three of their actors, newest first; id, \
                actor and createdAt are then the newest one's, and read is true only when all of them are read.
                """,
            access: .user, resultShape: Page<NotificationItem>.self, handler: list)
        router.register(
            "notifications.unreadCount", summary: "How many of the caller's notifications are unread: {count}.",
            access: .user, handler: unreadCount)
        router.register(
            "notifications.markRead",
            summary: "Marks the caller's notifications up to upTo (a notification id; all when omitted) read; returns {count}, the unread ones left.",
            access: .user, handler: markRead)
        router.register(
            "notifications.subscribe",
            summary: """
                Subscribes to the caller's notifications, on this connection: events {type: "notification", notification} \
                as they are made, {type: "withdrawn", notificationId} when an unlike, unfollow or deletion takes one back, \
                {type: "resync"} when some may have been missed (fetch the list), and {type: "unsubscribed", reason: \
                "unauthenticated"} last when the session that subscribed ends (logout, password change). With lastId, the notifications \
                after it are sent first, oldest first (at most 1,000, then a resync), with no gap or repeat before the live ones. \
                A user holds at most \(feed.hub.subscriptionsPerUserAndConnection) subscriptions on one connection (conflict beyond).
                """,
            access: .user, handler: subscribe)
        router.register(
            "notifications.unsubscribe",
            summary: "Ends a subscription of this connection. An unknown subscription is not_found.",
            access: .user, handler: unsubscribe)
    }
}
