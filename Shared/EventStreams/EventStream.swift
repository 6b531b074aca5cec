/// Where domain events live in Redis: one stream per topic, `aviary:events:<topic>`, whose entries
/// carry the fields `type`, `payload` (JSON), `outbox_id` and `source` (the producer's schema), and
/// beside it a dead-letter stream, `{aviary:events:<topic>}:dead`, for entries no consumer could
/// handle: tagged with the stream's name, so that one transaction moves entries from the stream to
/// it on a Redis Cluster too.
public enum EventStream {
    /// The stream of `topic`.
    public static func key(topic: String) -> String {
        "aviary:events:\(topic)"
    }

    /// The dead-letter stream of `topic`: entries a consumer group gave up on, with the original
    /// fields plus `original_id`, `group`, `consumer`, `deliveries` and `reason`.
    public static func deadLetterKey(topic: String) -> String {
        "{\(key(topic: topic))}:dead"
    }

    enum Field {
        static let type = "type"
        static let payload = "payload"
        static let outboxID = "outbox_id"
        static let source = "source"
    }
}
