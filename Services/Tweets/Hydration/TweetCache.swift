import EventStreams
import Logging
import RPC
import Redis
import ServiceKit

/// Pre-encoded tweets in Redis (`aviary:tweets:body:<id>`), so that reads neither ask the accounts
/// and media services nor encode JSON again for tweets someone read recently.
///
/// A body is the tweet's JSON object without its closing brace and without the fields that change
/// (`likes`, `replies`, `likedByMe`, `deleted`), which every read takes from Postgres. What a body
/// holds changes only when the tweet is deleted or a user it shows edits their profile; then the
/// key gets a short-lived tombstone instead of being deleted, and bodies are only ever written
/// where no key exists (`SET … NX`), so a read that built a body from data older than the change
/// cannot store it afterwards. Each process also holds the bodies it read lately (``LocalCopy``),
/// which a tombstone's announcement reaches.
struct TweetCache: Sendable {
    let redis: RedisClient
    /// This process's copy of the bodies read lately, if it keeps one.
    let local: LocalCopy<[UInt8]>?
    let logger: Logger

    /// How long an unread body stays.
    static let lifetime = 3600
    /// How long a tombstone keeps stale bodies out: longer than any read takes.
    static let tombstoneLifetime = 30
    private static let tombstone: [UInt8] = Array("-".utf8)

    static func key(_ id: Int64) -> String { "aviary:tweets:body:\(id)" }

    /// The cached bodies among `ids`: those this process holds, the others in one `MGET` (which
    /// the process then holds too). Redis being down is a miss for every id it was asked for. The
    /// epoch is for ``store(_:readSince:)``.
    func bodies(_ ids: [Int64]) async -> (found: [Int64: [UInt8]], epoch: LocalCopy<[UInt8]>.Epoch?) {
        guard !ids.isEmpty else { return ([:], nil) }
        var (found, epoch) = local?.values(ids) ?? ([:], nil)
        let asked = found.isEmpty ? ids : ids.filter { found[$0] == nil }
        guard !asked.isEmpty else { return (found, epoch) }
        do {
            let values = try await redis.send([RedisArgument("MGET")] + asked.map { RedisArgument(Self.key($0)) }).array ?? []
            var fetched: [Int64: [UInt8]] = [:]
            for (id, value) in zip(asked, values) {
                if let bytes = value.bytes, bytes != Self.tombstone { fetched[id] = bytes }
            }
            local?.keep(fetched, since: epoch)
            found.merge(fetched) { _, new in new }
        } catch {
            logger.warning("reading cached tweets failed", metadata: ["error": "\(error)"])
        }
        return (found, epoch)
    }

    /// Stores `bodies` where no body or tombstone is, in one pipeline; with the epoch of the read
    /// that built them, this process holds them too.
    func store(_ bodies: [(id: Int64, body: [UInt8])], readSince epoch: LocalCopy<[UInt8]>.Epoch? = nil) async {
        guard !bodies.isEmpty else { return }
        local?.keep(bodies.lazy.map { (key: $0.id, value: $0.body) }, since: epoch)
        let commands: [[RedisArgument]] = bodies.map { entry in
            ["SET", RedisArgument(Self.key(entry.id)), RedisArgument(entry.body), "EX", RedisArgument(Self.lifetime), "NX"]
        }
        do {
            _ = try await redis.pipeline(commands)
        } catch {
            logger.warning("caching tweets failed", metadata: ["error": "\(error)"])
        }
    }

    /// Replaces the bodies of `ids` with tombstones, in pipelines of 1,000, each followed by its
    /// announcement to every process's copy (``LocalCopy``). Throws when Redis fails, so that an event
    /// consumer retries.
    func forget(_ ids: [Int64]) async throws {
        for batch in ids.chunks(of: 1000) {
            let commands: [[RedisArgument]] = batch.map { id in
                ["SET", RedisArgument(Self.key(id)), RedisArgument(Self.tombstone), "EX", RedisArgument(Self.tombstoneLifetime)]
            } + [LocalCopyKind.bodies.announcement(of: batch, on: redis.configuration)]
            for reply in try await redis.pipeline(commands) {
                if case .error = reply { throw RPCError.unavailable("Redis refused a tombstone; retry shortly") }
            }
        }
    }
}
