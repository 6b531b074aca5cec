import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(
        name: .auth, migrations: AuthMigrations.all, outboxSchema: "auth", register: AuthService.registerMethods))
