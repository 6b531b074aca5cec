import AviaryAPI
import Locking
import Logging
import Redis

/// The accounts an admin suspended, whose tweets every read leaves out. The `users` consumer
/// (``ProfileUpdates``) keeps them in a Redis set, and bumps a version with each change; every
/// process holds a copy, which it reads again when the version moved (``refresh()``, each
/// ``refreshInterval``). So a suspension hides an author's tweets from every process within about a
/// second of its event, and a read costs a lookup in memory.
final class SuspendedAuthors: Sendable {
    static let members = "{aviary:tweets:suspended}:authors"
    static let version = "{aviary:tweets:suspended}:version"
    static let refreshInterval = Duration.seconds(1)

    private struct Copy {
        var version: Int?
        var authors: Set<Int64> = []
    }

    private let redis: RedisClient
    private let logger: Logger
    private let copy = Locked(Copy())

    init(redis: RedisClient, logger: Logger) {
        self.redis = redis
        self.logger = logger
    }

    /// Whether `author` is suspended, as this process last read; false before the first read.
    func contains(_ author: Int64) -> Bool {
        copy.withLock { $0.authors.contains(author) }
    }

    /// Reads the set again when its version moved; a failed read keeps the copy as it was.
    func refresh() async {
        do {
            let version = try await redis.send(["GET", RedisArgument(Self.version)]).int ?? 0
            guard copy.withLock({ $0.version != version }) else { return }
            let members = try await redis.send(["SMEMBERS", RedisArgument(Self.members)]).array ?? []
            let authors = Set(members.compactMap { $0.string.flatMap { Int64($0) } })
            copy.withLock { $0 = Copy(version: version, authors: authors) }
        } catch {
            logger.warning("could not read the suspended accounts; keeping the last copy", metadata: ["error": "\(error)"])
        }
    }

    /// Records that `author` is suspended (or no longer), for every process: idempotent, so an
    /// event delivered twice changes nothing more.
    func record(_ author: Int64, suspended: Bool) async throws {
        _ = try await redis.send([suspended ? "SADD" : "SREM", RedisArgument(Self.members), RedisArgument(String(author))])
        _ = try await redis.send(["INCR", RedisArgument(Self.version)])
        await refresh()
    }
}
