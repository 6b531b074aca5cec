import AviaryAPI
import EventStreams
import Logging
import ServiceKit

/// The topics notifications consume: follows, tweets (replies, mentions, likes, deletions) and
/// messages for members who were offline.
enum NotificationConsumers {
    static let topics = [GraphTopic.name, TweetsTopic.name, MessagingTopic.name]

    /// One instance at a time consumes each topic (a lease): a user's notifications are stored and
    /// pushed in the order their events happened, which instances sharing a stream cannot promise.
    static func definitions(_ service: NotificationsService) -> [EventConsumerDefinition] {
        var options = EventStreamConsumer.Options()
        options.leaseTime = .seconds(5)
        // Every re-read of a failed entry counts as a delivery: with the default 10, a minute of
        // Postgres or auth being unreachable would move events to the dead letters for good. 180,
        // at the 20 s longest pause between tries, rides out an hour's outage.
        options.maxDeliveries = 180
        // Most events of a busy topic change nothing here (a tweet without mentions, a message to
        // members who are online): reading them a few at a time costs far less than one wake-up,
        // read and acknowledgement each, and a notification pushed 20 ms later is still well within
        // the 100 ms it may take.
        options.gatherDelay = .milliseconds(20)
        return topics.map { topic in
            EventConsumerDefinition(topic: topic, options: options) { batch in try await consume(batch, service) }
        }
    }

    /// Stores what the batch means in one transaction (events applied before are skipped), then
    /// publishes it to live subscribers. Throwing makes the consumer retry the batch.
    static func consume(_ batch: EventBatch, _ service: NotificationsService) async throws {
        var events: [(key: String, changes: [NotificationStore.Change])] = []
        for delivered in batch.events {
            do {
                // Most events change nothing (a message to members who are all online): they need
                // neither a deduplication row nor a transaction.
                let changes = try EventIntake.changes(of: delivered.event)
                if !changes.isEmpty { events.append((delivered.deduplicationKey, changes)) }
            } catch {
                // Retrying cannot fix a payload: skip it, loudly.
                service.resources.logger.error(
                    "skipping an event notifications cannot read",
                    metadata: [
                        "events.topic": "\(batch.topic)", "events.type": "\(delivered.event.type)",
                        "events.key": "\(delivered.deduplicationKey)", "error": "\(error)",
                    ])
            }
        }
        guard !events.isEmpty else { return }
        let outcome = try await service.store.apply(events)
        await service.feed.publish(outcome, logger: service.resources.logger)
    }
}
