import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(name: .auth, migrations: AuthMigrations.all, register: AuthService.registerMethods))
