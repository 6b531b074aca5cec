import ServiceKit

extension AuthService {
    /// What `aviary-auth` is: its name, its tables and its methods, for ``ServiceApplication``, which
    /// runs it as a process, and for tests, which build it in-process.
    public static let definition = ServiceDefinition(name: .auth, migrations: AuthSchema.migrations, outboxSchema: "auth", register: registerMethods)
}
