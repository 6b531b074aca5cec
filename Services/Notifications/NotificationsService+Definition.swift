import ServiceKit

extension NotificationsService {
    /// What `aviary-notifications` is: its name, its tables and its methods, for ``ServiceApplication``, which
    /// runs it as a process, and for tests, which build it in-process.
    public static let definition = ServiceDefinition(name: .notifications, migrations: NotificationSchema.migrations, register: register)
}
