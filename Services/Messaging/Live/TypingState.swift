import Foundation
import Redis

/// Who is typing where, in Redis (`aviary:messaging:typing:<conversationId>:<userId>`), so that
/// every instance agrees: the key holds a token for "typing" (expiring after `lifetime`) or `off`.
/// Each change is announced once: repeated "typing" calls within `throttle` of the last announced
/// one are absorbed, "stopped" is announced only after "typing", and the instance that announced
/// "typing" announces its expiry unless something newer happened meanwhile.
struct TypingState: Sendable {
    let redis: RedisClient
    static let lifetime = Duration.seconds(6)
    static let throttle = Duration.seconds(2)
    private static let lifetimeMilliseconds: Int64 = 6000
    private static let throttleMilliseconds: Int64 = 2000
    /// `off` outlives any pending expiry check, so a stop is never announced twice.
    private static let offMilliseconds: Int64 = 12_000

    private static func key(_ conversation: Int64, _ user: Int64) -> String {
        "aviary:messaging:typing:\(conversation):\(user)"
    }

    /// Marks the user typing; returns the token to expire it with, or nil when within the throttle
    /// of the last announcement (nothing to announce).
    func start(_ conversation: Int64, user: Int64) async throws -> String? {
        let token = UUID().uuidString
        let reply = try await redis.evaluate(
            Self.startScript, keys: [Self.key(conversation, user)],
            arguments: [RedisArgument(token), RedisArgument(Self.lifetimeMilliseconds), RedisArgument(Self.throttleMilliseconds)])
        return reply.int == 1 ? token : nil
    }

    /// Marks the user not typing; true when they were (a change to announce).
    func stop(_ conversation: Int64, user: Int64) async throws -> Bool {
        let reply = try await redis.evaluate(
            Self.stopScript, keys: [Self.key(conversation, user)], arguments: [RedisArgument(Self.offMilliseconds)])
        return reply.int == 1
    }

    /// After the lifetime of `token`: true when it is still the last change, so its expiry is to be announced.
    func expire(_ conversation: Int64, user: Int64, token: String) async throws -> Bool {
        let reply = try await redis.evaluate(
            Self.expireScript, keys: [Self.key(conversation, user)],
            arguments: [RedisArgument(token), RedisArgument(Self.offMilliseconds)])
        return reply.int == 1
    }

    private static let startScript = RedisScript(
        """
        local current = redis.call('GET', KEYS[1])
        if current and current ~= 'off' then
            local left = redis.call('PTTL', KEYS[1])
            if tonumber(ARGV[2]) - left < tonumber(ARGV[3]) then return 0 end
        end
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return 1
        """)

    private static let stopScript = RedisScript(
        """
        local current = redis.call('GET', KEYS[1])
        redis.call('SET', KEYS[1], 'off', 'PX', ARGV[1])
        if current and current ~= 'off' then return 1 end
        return 0
        """)

    /// The key may have lapsed already (then nobody else changed it) or still hold the token.
    private static let expireScript = RedisScript(
        """
        local current = redis.call('GET', KEYS[1])
        if current == false or current == ARGV[1] then
            redis.call('SET', KEYS[1], 'off', 'PX', ARGV[2])
            return 1
        end
        return 0
        """)
}
