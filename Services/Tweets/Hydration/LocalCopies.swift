import AviaryAPI
import EventStreams
import Logging
import Redis

/// What a tweets process holds of what it read lately (``LocalCopy``), one copy of each kind.
struct LocalCopies: Sendable {
    let bodies: LocalCopy<[UInt8]>
    let users: LocalCopy<UserSummary>
    let states: LocalCopy<TweetState>
    let counts: LocalCopy<Int64>

    init(capacity: Int, redis: RedisClient, logger: Logger) {
        bodies = LocalCopy(.bodies, redis: redis, capacity: capacity, lifetime: .seconds(30), logger: logger)
        users = LocalCopy(.users, redis: redis, capacity: capacity, lifetime: .seconds(60), logger: logger)
        states = LocalCopy(.states, redis: redis, capacity: capacity, lifetime: .seconds(10), markingWriters: true, logger: logger)
        counts = LocalCopy(.counts, redis: redis, capacity: capacity, lifetime: .seconds(10), logger: logger)
    }

    var watches: [@Sendable (RedisSubscriber) async -> Void] {
        [bodies.watch(on:), users.watch(on:), states.watch(on:), counts.watch(on:)]
    }
}

extension LocalCopyKind {
    /// Tweet bodies (``TweetCache``): ``TweetCache/forget(_:)`` announces tweets after their
    /// tombstones are in.
    static let bodies = LocalCopyKind(service: "tweets", name: "bodies", channelPrefix: "aviary:tweets:forget")
    /// User summaries (``Accounts/author(_:context:)``): the profile consumer announces users
    /// before it looks up the tweets that show them.
    static let users = LocalCopyKind(service: "tweets", name: "users", channelPrefix: "aviary:tweets:forget-users")
    /// Tweet counts and flags (``TweetStates``): the outbox relay announces the tweets of the events
    /// that change them (``TweetStates/changedBy``).
    static let states = LocalCopyKind(service: "tweets", name: "states", channelPrefix: "aviary:tweets:forget-states")
    /// How many live tweets authors have (``AuthorTweetCounts``): the outbox relay announces the
    /// authors of creates and deletes (``AuthorTweetCounts/changedBy``).
    static let counts = LocalCopyKind(service: "tweets", name: "counts", channelPrefix: "aviary:tweets:forget-counts")
}
