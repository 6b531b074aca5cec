import AviaryAPI
import EventStreams
import RPC
import Redis
import ServiceKit

/// The consumer of the `users` topic: when a user changes their profile (`updated`, `{userId}`),
/// every process forgets its copy of their summary, and the cached bodies of every tweet that shows
/// it (theirs, replies to them, mentions of them) get tombstones, so the next read builds them with
/// the new name and picture. When an admin suspends an account (`suspended`) or lifts the
/// suspension (`reinstated`), ``SuspendedAuthors`` hears it, in the order they came. When a user
/// deletes their account (`deleted`), their tweets, likes, bookmarks and pin are erased
/// (``TweetStore/erase(user:)``) and every process forgets the states that changed.
enum ProfileUpdates {
    static func consumer(_ resources: ServiceResources, suspended: SuspendedAuthors) -> EventConsumerDefinition {
        EventConsumerDefinition(topic: UsersTopic.name) { batch in
            for delivered in batch.events {
                if let change = try? delivered.event.payload(UsersTopic.suspended) {
                    try await suspended.record(change.userId.value, suspended: true)
                } else if let change = try? delivered.event.payload(UsersTopic.reinstated) {
                    try await suspended.record(change.userId.value, suspended: false)
                }
            }
            try await erase(DeletedAccounts.users(in: batch), resources)
            try await forget(batch, resources)
        }
    }

    private static func erase(_ users: [Int64], _ resources: ServiceResources) async throws {
        let store = TweetStore(postgres: resources.postgres)
        for user in users {
            let changed = try await store.erase(user: user)
            try await LocalCopyKind.counts.announce([user], on: resources.redis)
            try await LocalCopyKind.states.announce(changed, on: resources.redis)
        }
    }

    private static func forget(_ batch: EventBatch, _ resources: ServiceResources) async throws {
        // A payload of another shape names no one to forget: skipped, as retrying cannot change it.
        let users = Set(batch.events.compactMap { delivered in
            (try? delivered.event.payload(UsersTopic.updated))?.flatMap { $0.userId.value }
        })
        guard !users.isEmpty else { return }
        // First every process's copy of their summaries: a tweet posted with an old one after the
        // lookup below is then not cached (see `Accounts.isCurrent`).
        _ = try await resources.redis.send(LocalCopyKind.users.announcement(of: users, on: resources.redis.configuration))
        let store = TweetStore(postgres: resources.postgres)
        // Announcing what it forgets reaches this process's copy of the bodies too.
        let cache = TweetCache(redis: resources.redis, local: nil, logger: resources.logger)
        for user in users {
            // Idempotent: a redelivered event only tombstones the same keys again.
            try await cache.forget(try await store.showing(user: user))
        }
    }
}
