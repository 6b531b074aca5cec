import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(
        name: .auth, migrations: AuthSchema.migrations, outboxSchema: "auth", register: AuthService.registerMethods))
