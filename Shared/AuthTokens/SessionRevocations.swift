import Redis

/// Sessions ended by logout or a password change. A revoked session id is kept in Redis for as
/// long as its tokens could still be valid, so every service checks it with one cheap lookup.
public struct SessionRevocations: Sendable {
    private let redis: RedisClient
    private let tokenLifetime: Duration

    public init(redis: RedisClient, tokenLifetime: Duration) {
        self.redis = redis
        self.tokenLifetime = tokenLifetime
    }

    static func key(_ sessionID: Int64) -> String { "aviary:revoked-session:\(sessionID)" }

    public func revoke(sessionIDs: [Int64]) async throws {
        guard !sessionIDs.isEmpty else { return }
        let seconds = Int(tokenLifetime.components.seconds) + 60
        _ = try await redis.pipeline(sessionIDs.map { ["SET", RedisArgument(Self.key($0)), "1", "EX", RedisArgument(seconds)] })
    }

    public func isRevoked(sessionID: Int64) async throws -> Bool {
        try await redis.send(["EXISTS", RedisArgument(Self.key(sessionID))]).int == 1
    }
}
