import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(name: .media, migrations: MediaSchema.migrations, register: MediaService.register))
