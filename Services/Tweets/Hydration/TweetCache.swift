import Logging
import RPC
import Redis

/// Pre-encoded tweets in Redis (`aviary:tweets:body:<id>`), so that reads neither ask the accounts
/// and media services nor encode JSON again for tweets someone read recently.
///
/// A body is the tweet's JSON object without its closing brace and without the fields that change
/// (`likes`, `replies`, `likedByMe`, `deleted`), which every read takes from Postgres. What a body
/// holds changes only when the tweet is deleted or a user it shows edits their profile; then the
/// key gets a short-lived tombstone instead of being deleted, and bodies are only ever written
/// where no key exists (`SET … NX`), so a read that built a body from data older than the change
/// cannot store it afterwards.
struct TweetCache: Sendable {
    let redis: RedisClient
    let logger: Logger

    /// How long an unread body stays.
    static let lifetime = 3600
    /// How long a tombstone keeps stale bodies out: longer than any read takes.
    static let tombstoneLifetime = 30
    private static let tombstone: [UInt8] = Array("-".utf8)

    static func key(_ id: Int64) -> String { "aviary:tweets:body:\(id)" }

    /// The cached bodies among `ids`, in one `MGET`. Redis being down is a miss for every id.
    func bodies(_ ids: [Int64]) async -> [Int64: [UInt8]] {
        guard !ids.isEmpty else { return [:] }
        do {
            let values = try await redis.send([RedisArgument("MGET")] + ids.map { RedisArgument(Self.key($0)) }).array ?? []
            var found: [Int64: [UInt8]] = [:]
            for (id, value) in zip(ids, values) {
                if let bytes = value.bytes, bytes != Self.tombstone { found[id] = bytes }
            }
            return found
        } catch {
            logger.warning("reading cached tweets failed", metadata: ["error": "\(error)"])
            return [:]
        }
    }

    /// Stores `bodies` where no body or tombstone is, in one pipeline.
    func store(_ bodies: [(id: Int64, body: [UInt8])]) async {
        guard !bodies.isEmpty else { return }
        let commands: [[RedisArgument]] = bodies.map { entry in
            ["SET", RedisArgument(Self.key(entry.id)), RedisArgument(entry.body), "EX", RedisArgument(Self.lifetime), "NX"]
        }
        do {
            _ = try await redis.pipeline(commands)
        } catch {
            logger.warning("caching tweets failed", metadata: ["error": "\(error)"])
        }
    }

    /// Replaces the bodies of `ids` with tombstones, in pipelines of 1,000. Throws when Redis fails,
    /// so that an event consumer retries.
    func forget(_ ids: [Int64]) async throws {
        for start in stride(from: 0, to: ids.count, by: 1000) {
            let commands: [[RedisArgument]] = ids[start..<min(start + 1000, ids.count)].map { id in
                ["SET", RedisArgument(Self.key(id)), RedisArgument(Self.tombstone), "EX", RedisArgument(Self.tombstoneLifetime)]
            }
            for reply in try await redis.pipeline(commands) {
                if case .error = reply { throw RPCError.unavailable("Redis refused a tombstone; retry shortly") }
            }
        }
    }
}
