import ChannelSupport
import Locking
import Logging
import Redis

/// Things written lately, each marked for `window` after its write: in this process, and in Redis
/// (`<prefix><thing>`, expiring) for the other instances. A read of a marked thing skips whatever
/// may not have caught up with the write yet (a replica, a process's copy), so the writer reads
/// their own write whichever instance answers.
public final class WriteMarks: Sendable {
    private let redis: RedisClient
    private let prefix: String
    private let window: Duration
    private let logger: Logger
    private let marked = Locked<[String: ContinuousClock.Instant]>([:])

    public init(redis: RedisClient, prefix: String, window: Duration, logger: Logger) {
        self.redis = redis
        self.prefix = prefix
        self.window = window
        self.logger = logger
    }

    /// Marks `things` as just written, for `window`. Call after the write committed, before
    /// answering.
    public func mark(_ things: [String]) async {
        guard !things.isEmpty else { return }
        let until = ContinuousClock.now + window
        marked.withLock { marks in
            if marks.count > 100_000 {
                let now = ContinuousClock.now
                marks = marks.filter { $0.value > now }
            }
            for thing in things { marks[thing] = until }
        }
        do {
            _ = try await redis.pipeline(
                things.map { ["SET", RedisArgument(prefix + $0), "1", "PX", RedisArgument(window.milliseconds)] })
        } catch {
            // The other instances may answer from what they held a moment longer; this one does not.
            logger.warning("could not mark a write for the other instances", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// Whether `thing` was written within `window`, here or in another instance; true when Redis
    /// cannot say.
    public func isMarked(_ thing: String) async -> Bool {
        let now = ContinuousClock.now
        let local = marked.withLock { marks -> Bool in
            guard let until = marks[thing] else { return false }
            if until > now { return true }
            marks.removeValue(forKey: thing)
            return false
        }
        if local { return true }
        do {
            return try await redis.send(["EXISTS", RedisArgument(prefix + thing)]).int != 0
        } catch {
            return true
        }
    }
}
