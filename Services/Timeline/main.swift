import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(name: .timeline, consumers: TimelineEvents.consumers, register: Timeline.register))
