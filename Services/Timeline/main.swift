import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(name: .timeline, register: TimelineService.register))
