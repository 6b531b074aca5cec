import ArgumentParser
import Foundation
import Logging
import Redis
import TimelineService

/// `aviary bench memory`: what the services' per-user and per-tweet keys cost in Redis, by
/// `MEMORY USAGE` (exact: `SAMPLES 0`) over a sample of each kind, with the server's encoding
/// settings as they are. Reads only; run it on a stack loaded by `bench timeline`.
struct MemoryBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "memory",
        abstract: """
            Redis memory per key and per timeline entry, by MEMORY USAGE over a sample of each kind of key \
            (target: ≤ 24 bytes per home-timeline entry, ≤ 20 KB per full timeline).
            """,
        discussion: """
            Timelines of either layout are measured: sorted sets (before issue 44, entries = ZCARD less the sentinel) \
            and packed strings (entries = (STRLEN - 1) / 8).
            """)

    @Option(help: "The Redis server.")
    var url = "redis://127.0.0.1:6379"

    @Option(help: "Keys measured of each kind at most.")
    var sample = 200

    @Option(help: "Entries of a full timeline (AVIARY_TIMELINE_CAPACITY).")
    var capacity = 800

    func validate() throws {
        guard (1...100_000).contains(sample) else { throw ValidationError("--sample must be 1 to 100,000, not \(sample)") }
        guard (1...100_000).contains(capacity) else { throw ValidationError("--capacity must be 1 to 100,000, not \(capacity)") }
    }

    func run() async throws {
        let redis = RedisClient(configuration: try RedisConfiguration(url: url, poolSize: 1), logger: Logger(label: "bench"))
        try await RedisMemory(redis: redis, sample: sample, capacity: capacity).report()
        await redis.shutdown()
    }
}

/// The report of `bench memory`, which `bench timeline` prints too, before it flushes Redis.
struct RedisMemory {
    let redis: RedisClient
    let sample: Int
    let capacity: Int

    /// A kind of key: its `SCAN` pattern, and whether its entries are timeline entries.
    private struct Kind {
        var name: String
        var pattern: String
        var timeline: Bool
        var perUser: Bool
    }

    private static let kinds = [
        Kind(name: "home timelines", pattern: "aviary:timeline:home:*", timeline: true, perUser: true),
        Kind(name: "user timelines", pattern: "aviary:timeline:user:*", timeline: true, perUser: true),
        Kind(name: "tweet bodies", pattern: "aviary:tweets:body:*", timeline: false, perUser: false),
        Kind(name: "followers versions", pattern: "aviary:timeline:followers-version:*", timeline: false, perUser: true),
        Kind(name: "followed celebrities", pattern: "aviary:timeline:follows-celebrities:*", timeline: false, perUser: true),
        Kind(name: "author tweet counts", pattern: "aviary:tweets:count:*", timeline: false, perUser: true),
    ]

    func report() async throws {
        let settings = try await redis.send(["CONFIG", "GET", "zset-max-listpack-entries"]).array?.last?.string ?? "?"
        print("Redis: zset-max-listpack-entries \(settings); MEMORY USAGE … SAMPLES 0 over at most \(sample) keys of each kind")
        var perUser = 0.0
        for kind in Self.kinds {
            let (keys, total) = try await scan(kind.pattern, keeping: sample)
            guard !keys.isEmpty else {
                print("\(kind.name): none")
                continue
            }
            var commands: [[RedisArgument]] = []
            for key in keys {
                commands += [["MEMORY", "USAGE", RedisArgument(key), "SAMPLES", 0], ["TYPE", RedisArgument(key)], ["STRLEN", RedisArgument(key)]]
                commands.append(["ZCARD", RedisArgument(key)])
            }
            // STRLEN of a set and ZCARD of a string answer WRONGTYPE; the other of the two counts.
            let replies = try await redis.pipeline(commands)
            var bytes = 0
            var entries = 0
            var full: [Int] = []
            for index in keys.indices {
                let used = replies[index * 4].int ?? 0
                let type = replies[index * 4 + 1].string
                let count =
                    type == "zset"
                    ? max(0, (replies[index * 4 + 3].int ?? 1) - 1)
                    : PackedTimeline.entryCount(ofLength: replies[index * 4 + 2].int ?? 0)
                bytes += used
                entries += count
                if kind.timeline, count >= capacity { full.append(used) }
            }
            let mean = Double(bytes) / Double(keys.count)
            var line = String(format: "%@: %d keys (%d measured), %.0f bytes a key", kind.name, total, keys.count, mean)
            if kind.timeline {
                line += String(format: ", %.1f entries a key, %.1f bytes an entry", Double(entries) / Double(keys.count), Double(bytes) / Double(max(1, entries)))
                line += full.isEmpty
                    ? ", no full timeline"
                    : String(format: ", %.1f KB a full timeline (%d of them)", Double(full.reduce(0, +)) / Double(full.count) / 1000, full.count)
            }
            print(line)
            if kind.perUser { perUser += mean }
        }
        print(String(format: "per user, the per-user kinds above together: %.0f bytes; a million active users: %.2f GB", perUser, perUser * 1e6 / 1e9))
    }

    /// Up to `limit` keys matching `pattern` (the first `SCAN` finds), and how many match in all.
    private func scan(_ pattern: String, keeping limit: Int) async throws -> (keys: [String], total: Int) {
        var cursor = "0"
        var keys: [String] = []
        var total = 0
        repeat {
            let reply = try await redis.send(["SCAN", RedisArgument(cursor), "MATCH", RedisArgument(pattern), "COUNT", 1000]).array ?? []
            cursor = reply.first?.string ?? "0"
            let found = (reply.last?.array ?? []).compactMap(\.string).filter { !$0.hasSuffix(":lock") }
            total += found.count
            keys += found.prefix(max(0, limit - keys.count))
        } while cursor != "0"
        return (keys, total)
    }
}
