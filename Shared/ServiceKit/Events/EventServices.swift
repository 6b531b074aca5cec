import EventStreams
import Redis
import ServiceLifecycle

/// The event services a definition asks for, placed around the servers in the service group.
struct EventServices {
    /// The outbox relay: listed before the RPC server, so that it stops after it and relays what
    /// requests still draining append.
    var relay: [ServiceGroupConfiguration.ServiceConfiguration] = []
    /// The consumers: listed after the servers, so they stop first.
    var consumers: [ServiceGroupConfiguration.ServiceConfiguration] = []

    init(_ definition: ServiceDefinition, resources: ServiceResources) {
        if let schema = definition.outboxSchema {
            var relayOptions = OutboxRelay.Options()
            relayOptions.replicaAcknowledgements = resources.configuration.redisReplicaAcknowledgements
            relay = [
                .init(service: OnEventLoop(OutboxRelay(
                    schema: schema, postgres: resources.postgres, redis: resources.redis, options: relayOptions,
                    preparation: resources.outboxPreparation, logger: resources.logger)))
            ]
        }
        let consumerName = EventStreamConsumer.consumerName(
            service: definition.name.rawValue, nodeID: resources.ids.nodeID)
        consumers = resources.consumers.map { consumer in
            .init(service: OnEventLoop(EventStreamConsumer(
                topic: consumer.topic, group: consumer.group ?? definition.name.rawValue, consumer: consumerName,
                redis: resources.redis.configuration, options: consumer.options, logger: resources.logger,
                handler: consumer.handler)))
        }
    }
}
