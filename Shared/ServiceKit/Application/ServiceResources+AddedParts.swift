import EventStreams
import ServiceLifecycle
import Locking

extension ServiceResources {
    /// Serves more routes on the admin HTTP port: `routes` adds them to the admin server's
    /// Hummingbird router, as media does with
    /// `resources.addAdminRoutes { router in router.get("/media/{id}") { request, context in … } }`.
    /// Call it from `register`: the admin server is built after it.
    public func addAdminRoutes(_ routes: @escaping AdminHTTPServer.Routes) {
        addedParts.withLock { $0.routes.append(routes) }
    }

    /// Runs `service` (a background job, such as a sweeper) in the service group next to the
    /// servers, so it starts with them and stops on graceful shutdown. Call it from `register`.
    public func addBackgroundService(_ service: any Service) {
        addedParts.withLock { $0.services.append(service) }
    }

    /// Makes `GET /readyz` wait for `check` as well, under `name` (the gateway: its public port
    /// listens). Call it from `register`.
    public func addReadinessCheck(_ name: String, _ check: @escaping @Sendable () async -> Bool) {
        addedParts.withLock { $0.readinessChecks.append((name, check)) }
    }

    var readinessChecks: [(String, @Sendable () async -> Bool)] {
        addedParts.withLock { $0.readinessChecks }
    }

    /// Has the service's ``OutboxRelay`` pass each batch through `preparation` before it sends the
    /// events on (messaging names who was offline this way). Call it from `register`.
    public func prepareOutboxEvents(with preparation: @escaping OutboxRelay.Preparation) {
        addedParts.withLock { $0.outboxPreparation = preparation }
    }

    var outboxPreparation: OutboxRelay.Preparation? {
        addedParts.withLock { $0.outboxPreparation }
    }

    /// Consumes a topic's events with `consumer` (an ``EventStreamConsumer`` in the service group,
    /// started after the servers). Call it from `register`, whose service value the handler can
    /// then share with the methods.
    public func consume(_ consumer: EventConsumerDefinition) {
        addedParts.withLock { $0.consumers.append(consumer) }
    }

    var consumers: [EventConsumerDefinition] {
        addedParts.withLock { $0.consumers }
    }

    var adminRoutes: [AdminHTTPServer.Routes] {
        addedParts.withLock { $0.routes }
    }

    var backgroundServices: [ServiceGroupConfiguration.ServiceConfiguration] {
        addedParts.withLock { $0.services }.map { .init(service: $0) }
    }
}

/// What a service's `register` added to its process beyond RPC methods.
struct AddedParts: Sendable {
    var routes: [AdminHTTPServer.Routes] = []
    var services: [any Service] = []
    var outboxPreparation: OutboxRelay.Preparation?
    var readinessChecks: [(String, @Sendable () async -> Bool)] = []
    var consumers: [EventConsumerDefinition] = []
}
