import ServiceKit

await ServiceApplication.main(ServiceDefinition(name: .gateway, register: Gateway.register))
