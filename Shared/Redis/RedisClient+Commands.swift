import ChannelSupport

/// Shorthands for the commands the services use most, where they read better than `send([...])`.
extension RedisClient {
    /// `GET key`: the value, or `nil` when the key does not exist.
    public func get(_ key: String) async throws -> [UInt8]? {
        try await send(["GET", RedisArgument(key)]).bytes
    }

    /// `SET key value [PX milliseconds]`.
    public func set(_ key: String, to value: RedisArgument, expiringAfter lifetime: Duration? = nil)
        async throws
    {
        var command: [RedisArgument] = ["SET", RedisArgument(key), value]
        if let lifetime {
            command += ["PX", RedisArgument(lifetime.milliseconds)]
        }
        _ = try await send(command)
    }

    /// `DEL key…`: how many of the keys existed.
    @discardableResult
    public func delete(_ keys: [String]) async throws -> Int {
        try await send(["DEL"] + keys.map { RedisArgument($0) }).int ?? 0
    }

    /// `PEXPIRE key milliseconds`: whether the key exists (and now expires).
    @discardableResult
    public func expire(_ key: String, after lifetime: Duration) async throws -> Bool {
        try await send(["PEXPIRE", RedisArgument(key), RedisArgument(lifetime.milliseconds)]).int == 1
    }

    /// `PUBLISH channel payload` (`SPUBLISH` on a cluster): how many subscribers (connections)
    /// received it.
    @discardableResult
    public func publish(_ payload: RedisArgument, to channel: String) async throws -> Int {
        try await send(configuration.publish(payload, to: channel)).int ?? 0
    }
}
