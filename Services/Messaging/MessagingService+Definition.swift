import ServiceKit

extension MessagingService {
    /// What `aviary-messaging` is: its name, its tables and its methods, for ``ServiceApplication``, which
    /// runs it as a process, and for tests, which build it in-process.
    public static let definition = ServiceDefinition(
        name: .messaging, migrations: MessagingSchema.migrations, outboxSchema: MessagingSchema.name, register: register)
}
