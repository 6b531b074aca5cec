import AviaryAPI
import EventStreams
import Logging
import ServiceKit

/// The topics notifications consume: follows, tweets (replies, mentions, likes, deletions) and
/// messages for members who were offline.
enum NotificationConsumers {
    static let topics = [GraphTopic.name, TweetsTopic.name, MessagingTopic.name]

    /// Each topic's work is cut into `partitions` by recipient, each partition a consumer group of
    /// its own that one instance at a time consumes (a lease), so that a user's notifications are
    /// stored and pushed in the order their events happened (which instances sharing one group
    /// cannot promise), while k instances share the partitions (``PartitionMembership``) and store
    /// k times as many. Each group reads the whole stream and keeps its recipients' changes. The
    /// groups take over from an earlier partitioning (or the single group `notifications` of
    /// before): they start where it stood.
    static func definitions(_ service: NotificationsService, partitions: Int, membership: PartitionMembership) -> [EventConsumerDefinition] {
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
        let current = Set((0..<partitions).map { group($0, of: partitions) })
        options.isPredecessor = { name in
            name == "notifications" || (name.hasPrefix("notifications-p") && !current.contains(name))
        }
        return topics.flatMap { topic in
            (0..<partitions).map { partition in
                var options = options
                options.mayHoldLease = { await membership.owns(partition) }
                return EventConsumerDefinition(topic: topic, group: group(partition, of: partitions), options: options) { batch in
                    try await consume(batch, partition: partition, of: partitions, service)
                }
            }
        }
    }

    /// The consumer group of one partition: `notifications-p<partition>-of-<partitions>`.
    static func group(_ partition: Int, of partitions: Int) -> String {
        "notifications-p\(partition)-of-\(partitions)"
    }

    /// The partition of `recipient`'s notifications (ids are time-ordered, their low bits mostly
    /// zero: they are mixed first).
    static func partition(of recipient: Int64, among partitions: Int) -> Int {
        var mixed = UInt64(bitPattern: recipient)
        mixed ^= mixed >> 33
        mixed &*= 0xff51_afd7_ed55_8ccd
        mixed ^= mixed >> 33
        return Int(mixed % UInt64(partitions))
    }

    /// The notifications among `changes` that their actor may not give their recipient: one of them
    /// blocked the other, or the recipient muted the actor with notifications
    /// (`graph.silencedPairs`, one call per thousand). Follows, likes, replies and messages are
    /// refused across a block where they are made; a mention is not, nor anything by a muted user.
    private static func silenced(
        in changes: [NotificationStore.Change], _ service: NotificationsService
    ) async throws -> Set<NotificationStore.Change> {
        var adds: [NewNotification] = []
        for case .add(let new) in changes { adds.append(new) }
        var silenced = Set<NotificationStore.Change>()
        for chunk in adds.chunks(of: 1000) {
            let pairs = chunk.map { UserPair(userId: EntityID($0.recipient), otherId: EntityID($0.actor)) }
            let answers = try await service.resources.peers.graph.silencedPairs(UserPairsParams(pairs: pairs), context: nil)
            for (new, isSilenced) in zip(chunk, answers) where isSilenced { silenced.insert(.add(new)) }
        }
        return silenced
    }

    /// Stores what the batch means in one transaction (events applied before are skipped), then
    /// publishes it to live subscribers. Throwing makes the consumer retry the batch.
    /// Only the changes of the partition's recipients are kept, each recipient's under a key of its
    /// own (``NotificationStore/recipientKey(_:_:)``): partitionings may change, and a change is
    /// applied once whichever partition sees it.
    static func consume(_ batch: EventBatch, partition: Int, of partitions: Int, _ service: NotificationsService) async throws {
        var events: [(key: String, changes: [NotificationStore.Change])] = []
        for delivered in batch.events {
            do {
                // Most events change nothing (a message to members who are all online): they need
                // neither a deduplication row nor a transaction.
                let changes = try EventIntake.changes(of: delivered.event).filter {
                    Self.partition(of: $0.recipient, among: partitions) == partition
                }
                for recipient in Set(changes.map(\.recipient)).sorted() {
                    events.append(
                        (NotificationStore.recipientKey(delivered.deduplicationKey, recipient), changes.filter { $0.recipient == recipient }))
                }
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
        let silenced = try await silenced(in: events.flatMap(\.changes), service)
        if !silenced.isEmpty {
            events = events.map { event in (event.key, event.changes.filter { !silenced.contains($0) }) }
        }
        let outcome = try await service.store.apply(events)
        await service.feed.publish(outcome, logger: service.resources.logger)
    }
}
