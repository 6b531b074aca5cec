import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(name: .timeline, register: Timeline.register))
