/// A message received on a subscribed channel (or on a channel matching a subscribed pattern).
public struct RedisMessage: Sendable, Equatable {
    /// The channel it was published to (for a pattern subscription, the matching channel).
    public var channel: String
    /// The published bytes, unchanged.
    public var payload: [UInt8]

    /// A message as the subscriber delivers it (public for comparisons in tests).
    public init(channel: String, payload: [UInt8]) {
        self.channel = channel
        self.payload = payload
    }
}

/// What a subscription listens to: a channel name (`SUBSCRIBE`) or a glob pattern (`PSUBSCRIBE`).
enum SubscriptionTopic: Hashable, Sendable {
    case channel(String)
    case pattern(String)
}
