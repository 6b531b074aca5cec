import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(
        name: .notifications, migrations: NotificationSchema.migrations,
        register: NotificationsService.register))
