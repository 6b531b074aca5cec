import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(
        name: .socialGraph, migrations: GraphSchema.migrations, outboxSchema: GraphSchema.name,
        register: SocialGraphService.register))
