import AviaryAPI
import RPC
import ServiceKit

/// The consumer of the `users` topic: when a user changes their profile (`updated`, `{userId}`),
/// the cached bodies of every tweet that shows their summary (theirs, replies to them, mentions of
/// them) get tombstones, so the next read builds them with the new name and picture.
enum ProfileUpdates {
    static let consumer = EventConsumerDefinition(topic: "users") { batch, resources in
        let users = Set(
            batch.events.compactMap { delivered -> Int64? in
                guard delivered.event.type == "updated", let text = delivered.event.payload["userId"]?.stringValue else {
                    return nil
                }
                return EntityID(text)?.value
            })
        guard !users.isEmpty else { return }
        let store = TweetStore(postgres: resources.postgres)
        // Announcing what it forgets reaches this process's copy of the bodies too.
        let cache = TweetCache(redis: resources.redis, local: nil, logger: resources.logger)
        for user in users {
            // Idempotent: a redelivered event only tombstones the same keys again.
            try await cache.forget(try await store.showing(user: user))
        }
    }
}
