import ServiceKit

await ServiceApplication.main(
    ServiceDefinition(
        name: .tweets, migrations: TweetSchema.migrations, outboxSchema: TweetSchema.name,
        register: TweetsService.register))
