import ServiceKit

extension TweetsService {
    /// What `aviary-tweets` is: its name, its tables and its methods, for ``ServiceApplication``, which
    /// runs it as a process, and for tests, which build it in-process.
    public static let definition = ServiceDefinition(
        name: .tweets, migrations: TweetSchema.migrations, outboxSchema: TweetSchema.name, register: register)
}
