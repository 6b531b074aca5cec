import AviaryAPI
import RPC
import EventStreams
import ServiceKit

/// The notifications service: an activity feed made from other services' events, stored in its own
/// tables and pushed live to subscribers on every instance.
public struct NotificationsService: Sendable {
    let resources: ServiceResources
    let store: NotificationStore
    let hydrator: NotificationHydrator
    let feed: NotificationFeed
    /// The grouping window of `list {grouped: true}`, in milliseconds.
    let groupWindow: Int64
    let pushStore: PushStore
    let push: PushDelivery

    init(resources: ServiceResources) throws {
        self.resources = resources
        let ids = resources.ids
        store = NotificationStore(postgres: resources.postgres, ids: { ids.next() })
        hydrator = NotificationHydrator(resources: resources)
        feed = NotificationFeed(hub: resources.liveHub, hydrator: hydrator)
        pushStore = PushStore(postgres: resources.postgres)
        push = PushDelivery(
            store: pushStore,
            sender: try PushSender(allowPrivate: try resources.configuration.integer("AVIARY_PUSH_ALLOW_PRIVATE_ENDPOINTS", default: 0, in: 0...1) == 1),
            hydrator: hydrator, resources: resources,
            contact: resources.configuration.value("AVIARY_PUSH_CONTACT") ?? "mailto:push@aviary.invalid")
        groupWindow = Int64(
            (try? resources.configuration.integer(
                "AVIARY_NOTIFICATIONS_GROUP_WINDOW_SECONDS", default: 86_400, in: 1...31_536_000)) ?? 86_400) * 1000
    }

    /// `ServiceDefinition.register`: builds the service from the runtime's resources and registers its methods.
    static func register(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        // Read once here so that a bad value stops the start with its message.
        _ = try resources.configuration.integer(
            "AVIARY_NOTIFICATIONS_GROUP_WINDOW_SECONDS", default: 86_400, in: 1...31_536_000)
        let partitions = try resources.configuration.integer("AVIARY_NOTIFICATIONS_PARTITIONS", default: 1, in: 1...64)
        let service = try NotificationsService(resources: resources)
        resources.addBackgroundService(PeriodicJob(every: PushDelivery.interval, service.push.deliver))
        resources.addBackgroundService(
            PushSessionWatch(revocations: resources.sessionRevocations, store: service.pushStore, logger: resources.logger))
        let sweeper = ConsumedEventSweeper(store: service.store, logger: resources.logger)
        resources.addBackgroundService(PeriodicJob(every: ConsumedEventSweeper.interval, sweeper.sweep))
        service.registerMethods(with: &router)
        let membership = PartitionMembership(
            redis: resources.redis, work: "notifications",
            member: EventStreamConsumer.consumerName(service: "notifications", nodeID: resources.ids.nodeID))
        for consumer in NotificationConsumers.definitions(service, partitions: partitions, membership: membership) {
            resources.consume(consumer)
        }
        resources.eraseDeletedAccounts { user in
            try await service.store.erase(user: user)
            try await service.pushStore.erase(user: user)
        }
    }

    func registerMethods(with router: inout RPCRouter) {
        router.register(NotificationsAPI.list, encoded: list)
        router.register(NotificationsAPI.unreadCount, handler: unreadCount)
        router.register(NotificationsAPI.markRead, handler: markRead)
        router.register(NotificationsAPI.dismiss, handler: dismiss)
        router.register(NotificationsAPI.clear, handler: clear)
        router.register(
            NotificationsAPI.subscribe,
            summary: NotificationsAPI.subscribeSummary(subscriptionsPerConnection: feed.hub.subscriptionsPerUserAndConnection),
            handler: subscribe)
        router.register(NotificationsAPI.unsubscribe, handler: unsubscribe)
        router.register(NotificationsAPI.setPush, handler: setPush)
        router.register(NotificationsAPI.push, handler: pushSubscription)
        router.register(NotificationsAPI.updatePush, handler: updatePush)
        router.register(NotificationsAPI.deletePush, handler: deletePush)
        router.register(NotificationsAPI.pushKey, handler: pushKey)
    }
}
