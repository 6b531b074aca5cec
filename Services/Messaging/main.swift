import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(
        name: .messaging, migrations: MessagingSchema.migrations, outboxSchema: MessagingSchema.name,
        register: MessagingService.register))
