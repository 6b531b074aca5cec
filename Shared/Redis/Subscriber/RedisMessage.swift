/// A message received on a subscribed channel.
public struct RedisMessage: Sendable, Equatable {
    /// The channel it was published to.
    public var channel: String
    /// The published bytes, unchanged.
    public var payload: [UInt8]

    /// A message as the subscriber delivers it (public for comparisons in tests).
    public init(channel: String, payload: [UInt8]) {
        self.channel = channel
        self.payload = payload
    }
}
