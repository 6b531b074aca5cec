import ServiceKit

await ServiceApplication.main(ServiceDefinition(name: .gateway, migrations: GatewaySchema.migrations, register: GatewayService.register))
