import Foundation
import Locking
import Logging
import Redis

/// The most used hashtags of the last hour, kept in Redis as posts arrive, never read from Postgres.
///
/// Every post adds one to each of its hashtags in its minute's sorted set and in the hour's
/// running sum (one script call). Every ``retireInterval`` each instance offers to subtract the
/// minutes that left the hour from the sum; a marker per minute makes that happen once, whichever
/// instance gets there first. A read is one `ZREVRANGE` of the sum, of the 100 most used, which
/// the process keeps for ``freshness`` and answers every read from meanwhile. All keys share the hash
/// tag `{aviary:tweets:trending}`, so the scripts run on one node of a cluster. A deleted tweet's
/// hashtags keep counting until their minute leaves the hour. Like every Redis key here it is a
/// cache: after a flush the counts start again from the posts that follow.
struct TrendingHashtags: Sendable {
    let redis: RedisClient
    let logger: Logger
    /// The last top 100 read and when; shared by the copies of this value.
    private let latest = Shared()

    private final class Shared: Sendable {
        let value = Locked<(at: ContinuousClock.Instant, top: [(hashtag: String, uses: Int64)])?>(nil)
    }

    init(redis: RedisClient, logger: Logger) {
        self.redis = redis
        self.logger = logger
    }

    /// How long a read top list answers before Redis is asked again.
    static let freshness = Duration.seconds(1)
    /// The most hashtags a read gives.
    static let readLimit = 100

    static let window = 60  // minutes
    static let retireInterval = Duration.seconds(10)
    private static let tag = "{aviary:tweets:trending}"
    static let hourKey = "\(tag):hour"

    static func minuteKey(_ minute: Int64) -> String { "\(tag):minute:\(minute)" }
    static func retiredKey(_ minute: Int64) -> String { "\(tag):retired:\(minute)" }

    static func minute(of date: Date) -> Int64 { Int64(date.timeIntervalSince1970 / 60) }

    /// Counts one use of each of `hashtags` now. Best effort: a post is never failed for it.
    func count(_ hashtags: [String]) async {
        guard !hashtags.isEmpty else { return }
        do {
            _ = try await redis.evaluate(
                Self.countScript, keys: [Self.minuteKey(Self.minute(of: Date())), Self.hourKey],
                arguments: [RedisArgument(Self.window * 2 * 60)] + hashtags.map { RedisArgument($0) })
        } catch {
            logger.warning("could not count a post's hashtags for trending", metadata: ["error": "\(error)"])
        }
    }

    /// The `limit` (at most ``readLimit``) most used hashtags of the last hour with their uses, most
    /// used first; at most ``freshness`` old.
    func top(_ limit: Int) async throws -> ArraySlice<(hashtag: String, uses: Int64)> {
        let now = ContinuousClock.now
        if let kept = latest.value.withLock({ $0 }), now - kept.at < Self.freshness { return kept.top.prefix(limit) }
        let reply = try await redis.send(
            ["ZREVRANGE", RedisArgument(Self.hourKey), 0, RedisArgument(Self.readLimit - 1), "WITHSCORES"])
        let items = reply.array ?? []
        let top = stride(from: 0, to: items.count - 1, by: 2).compactMap { index -> (hashtag: String, uses: Int64)? in
            guard let hashtag = items[index].string, let uses = items[index + 1].string.flatMap(Double.init) else { return nil }
            return (hashtag, Int64(uses))
        }
        latest.value.withLock { $0 = (now, top) }
        return top.prefix(limit)
    }

    /// Subtracts from the hour's sum the minutes that left it lately (the last five, in case an
    /// instance was away), each once across every instance.
    func retire() async {
        let gone = Self.minute(of: Date()) - Int64(Self.window)
        do {
            _ = try await redis.evaluateEach(
                Self.retireScript,
                ((gone - 4)...gone).map { minute in
                    ([Self.hourKey, Self.minuteKey(minute), Self.retiredKey(minute)], [RedisArgument(Self.window * 2 * 60)])
                })
        } catch {
            logger.warning("could not retire old minutes from trending; trying again", metadata: ["error": "\(error)"])
        }
    }

    /// KEYS: the minute, the hour. ARGV: the minute's lifetime in seconds, then the hashtags.
    private static let countScript = RedisScript(
        """
        for i = 2, #ARGV do
            redis.call('ZINCRBY', KEYS[1], 1, ARGV[i])
            redis.call('ZINCRBY', KEYS[2], 1, ARGV[i])
        end
        redis.call('EXPIRE', KEYS[1], ARGV[1])
        return 1
        """)

    /// KEYS: the hour, the minute, its marker. ARGV: the marker's lifetime in seconds.
    private static let retireScript = RedisScript(
        """
        if not redis.call('SET', KEYS[3], '1', 'NX', 'EX', ARGV[1]) then return 0 end
        if redis.call('EXISTS', KEYS[2]) == 1 then
            redis.call('ZUNIONSTORE', KEYS[1], 2, KEYS[1], KEYS[2], 'WEIGHTS', 1, -1)
            redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', 0)
        end
        return 1
        """)
}
