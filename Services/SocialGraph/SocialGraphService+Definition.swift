import ServiceKit

extension SocialGraphService {
    /// What `aviary-social-graph` is: its name, its tables and its methods, for ``ServiceApplication``, which
    /// runs it as a process, and for tests, which build it in-process.
    public static let definition = ServiceDefinition(
        name: .socialGraph, migrations: GraphSchema.migrations, outboxSchema: GraphSchema.name, register: register)
}
