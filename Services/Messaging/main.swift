import ServiceKit

await ServiceApplication.main(ServiceDefinition(name: .messaging))
