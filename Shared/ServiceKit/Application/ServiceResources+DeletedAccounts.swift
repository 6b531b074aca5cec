import AviaryAPI
import EventStreams

extension ServiceResources {
    /// Erases what this service keeps of each user who deletes their account, as the `users`
    /// topic's `deleted` events come (in their order, by one instance of the service at a time):
    /// `erase` must be idempotent, as an event may come again. Call it from `register`. A service
    /// that consumes the `users` topic already reads ``DeletedAccounts/users(in:)`` in its own
    /// consumer instead (two consumers of one group would split the events).
    public func eraseDeletedAccounts(_ erase: @escaping @Sendable (Int64) async throws -> Void) {
        consume(EventConsumerDefinition(topic: UsersTopic.name) { batch in
            for user in DeletedAccounts.users(in: batch) { try await erase(user) }
        })
    }
}

/// The accounts deleted in a batch of the `users` topic.
public enum DeletedAccounts {
    /// The users whose `deleted` events `batch` holds, in order (a payload of another shape names
    /// no one: skipped, as retrying cannot change it).
    public static func users(in batch: EventBatch) -> [Int64] {
        batch.events.compactMap { delivered in (try? delivered.event.payload(UsersTopic.deleted))?.flatMap { $0.userId.value } }
    }
}
