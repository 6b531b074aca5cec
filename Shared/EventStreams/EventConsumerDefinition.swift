/// A topic a service consumes, added by its `register` (`ServiceResources.consume(_:)` in
/// ServiceKit); the runtime runs an ``EventStreamConsumer`` for it in the service group.
public struct EventConsumerDefinition: Sendable {
    /// Handles a batch; throwing makes the consumer retry it later.
    public typealias Handler = @Sendable (_ batch: EventBatch) async throws -> Void

    /// The topic whose stream is read (`graph`, `tweets`).
    public var topic: String
    /// The consumer group; nil means the service's name, so all its instances share the work.
    public var group: String?
    public var options: EventStreamConsumer.Options
    public var handler: Handler

    public init(
        topic: String, group: String? = nil, options: EventStreamConsumer.Options = .init(),
        handler: @escaping Handler
    ) {
        self.topic = topic
        self.group = group
        self.options = options
        self.handler = handler
    }
}
