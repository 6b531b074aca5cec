/// One domain event as a consumer receives it, with what it needs to deduplicate and to tell a
/// first delivery from a retry.
///
/// Delivery is at least once: the same event may arrive twice (a relay that crashed after writing
/// to Redis but before deleting the outbox rows, a consumer that crashed before acknowledging).
/// Handlers must be idempotent, or remember ``deduplicationKey``s.
public struct DeliveredEvent: Sendable, Hashable {
    /// The event as the producer appended it.
    public var event: DomainEvent
    /// The Redis stream entry id (`"1700000000000-0"`); a duplicate from the relay has a new one.
    public var streamID: String
    /// The producer's outbox schema (`social_graph`, `tweets`).
    public var source: String
    /// The row id in the producer's outbox: increasing, and the same in every duplicate.
    public var outboxID: Int64
    /// How many times this entry has been handed to a consumer of the group, this time included:
    /// 1 on the first delivery, more after a failed handler or a crashed consumer.
    public var deliveries: Int

    public init(event: DomainEvent, streamID: String, source: String, outboxID: Int64, deliveries: Int) {
        self.event = event
        self.streamID = streamID
        self.source = source
        self.outboxID = outboxID
        self.deliveries = deliveries
    }

    /// Identifies the event across duplicates: `"<source>:<outboxID>"`.
    public var deduplicationKey: String { "\(source):\(outboxID)" }
}

/// The events one read of a topic's stream returned, in stream order, for a consumer's handler.
/// They are acknowledged together once the handler returns.
public struct EventBatch: Sendable {
    /// The topic the events came from.
    public var topic: String
    /// The events, oldest first.
    public var events: [DeliveredEvent]

    public init(topic: String, events: [DeliveredEvent]) {
        self.topic = topic
        self.events = events
    }
}
