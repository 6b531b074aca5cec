import ServiceKit

extension GatewayService {
    /// What `aviary-gateway` is: its name, its tables and its methods, for ``ServiceApplication``, which
    /// runs it as a process, and for tests, which build it in-process.
    public static let definition = ServiceDefinition(name: .gateway, migrations: GatewaySchema.migrations, register: register)
}
