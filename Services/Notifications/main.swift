import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(
        name: .notifications, migrations: NotificationSchema.migrations,
        consumers: NotificationConsumers.definitions, register: NotificationsService.register))
