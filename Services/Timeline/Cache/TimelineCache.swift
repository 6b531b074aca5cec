import Redis
import ServiceKit

/// One read of a timeline: its state and up to the requested number of ids, newest first.
struct TimelineSlice: Sendable {
    var state: TimelineState
    var ids: [Int64]
    /// For a page after a cursor, the entries from the cursor up (oldest first), as many as asked:
    /// what the pages before it ended with.
    var above: [Int64] = []
}

/// The timelines in Redis (see ``TimelineKeys`` and ``PackedTimeline`` for their layout).
struct TimelineCache: Sendable {
    let redis: RedisClient
    /// Entries a timeline keeps after a trim.
    let capacity: Int

    /// The entries past which a timeline is trimmed back to the capacity: an eighth more, so that a
    /// full timeline is rewritten once per that many appends, not on every one.
    var trimLength: Int { capacity + max(1, capacity / 8) }

    /// Reads the newest `count` entries strictly before `before` of each timeline in `keys`, in one
    /// round trip that also sends `extra` (whose replies are returned), and keeps each timeline that
    /// exists for at least `lifetime` seconds from now (``renewLeases(_:lifetime:)``). A timeline of
    /// the layout before (``LegacyTimeline``) is converted first, once. With a cursor, each slice
    /// also holds the `above` entries from the cursor up, from the same read.
    func read(_ keys: [String], before: Int64?, count: Int, above: Int = 0, lifetime: Int, along extra: [[RedisArgument]] = [])
        async throws -> (slices: [TimelineSlice], extra: [RESPValue])
    {
        let stride = 3
        var replies = try await redis.pipeline(keys.flatMap { Self.readCommands($0, before: before, count: count) } + extra)
        let legacy = keys.indices.filter { Self.isLegacy(replies[$0 * stride]) }
        if !legacy.isEmpty {
            try await convertLegacy(legacy.map { keys[$0] })
            let again = try await redis.pipeline(legacy.flatMap { Self.readCommands(keys[$0], before: before, count: count) })
            for (position, index) in legacy.enumerated() {
                replies.replaceSubrange(index * stride..<(index + 1) * stride, with: again[position * stride..<(position + 1) * stride])
            }
        }
        let slices = try keys.indices.map { index in
            try Self.slice(state: replies[index * stride], page: replies[index * stride + 1], before: before, count: count, above: above)
        }
        try await renewLeases(keys.indices.map { (keys[$0], replies[$0 * stride + 2]) }, lifetime: lifetime)
        return (slices, Array(replies[(keys.count * stride)...]))
    }

    /// The state byte, the page and the lifetime left: the whole value for a page after a cursor
    /// (searched here), the end of it for the first page.
    private static func readCommands(_ key: String, before: Int64?, count: Int) -> [[RedisArgument]] {
        let page: [RedisArgument] =
            before == nil
            ? ["GETRANGE", RedisArgument(key), RedisArgument(-PackedTimeline.width * max(1, count)), -1]
            : ["GET", RedisArgument(key)]
        return [["GETRANGE", RedisArgument(key), 0, 0], page, ["TTL", RedisArgument(key)]]
    }

    /// Whether a reply is Redis refusing a string command on a sorted set: a ``LegacyTimeline``.
    private static func isLegacy(_ reply: RESPValue) -> Bool {
        reply.errorMessage?.hasPrefix("WRONGTYPE") == true
    }

    /// The slice of a state reply and a page reply. A set still of the layout before (its
    /// conversion kept losing to writes) reads as missing: its rebuild replaces it.
    private static func slice(state: RESPValue, page: RESPValue, before: Int64?, count: Int, above: Int) throws -> TimelineSlice {
        if isLegacy(state) { return TimelineSlice(state: .missing, ids: []) }
        try RedisError.throwFirstRefusal(in: [state, page])
        let timelineState = TimelineState(stateByte: state.bytes)
        guard let bytes = page.bytes, !bytes.isEmpty else { return TimelineSlice(state: timelineState, ids: []) }
        if let before {
            return TimelineSlice(
                state: timelineState, ids: PackedTimeline.newest(count, before: before, in: bytes),
                above: above > 0 ? PackedTimeline.oldest(above, from: before, in: bytes) : [])
        }
        // The end of the value: whole entries, or the whole value (state byte first) when it is shorter.
        let entries = bytes.count % PackedTimeline.width == 1 ? bytes.dropFirst() : bytes[...]
        return TimelineSlice(state: timelineState, ids: PackedTimeline.ids(in: entries).reversed())
    }

    /// A timeline that is read stays for at least `lifetime` seconds after the read: each of `leases`
    /// (a key and its `TTL` reply) with less than that left is given `lifetime` plus a tenth, in one
    /// pipeline. So a timeline read all day is written to (and Redis's append-only file with it) once
    /// per tenth of its lifetime, not on every read. Timelines that do not exist are left alone.
    func renewLeases(_ leases: [(key: String, left: RESPValue)], lifetime: Int) async throws {
        let lease = lifetime + lifetime / 10
        let renewals: [[RedisArgument]] = leases.compactMap { entry in
            guard case .integer(let seconds) = entry.left, seconds >= 0, seconds < lifetime else { return nil }
            return ["EXPIRE", RedisArgument(entry.key), RedisArgument(lease)]
        }
        guard !renewals.isEmpty else { return }
        _ = try await redis.pipeline(renewals)
    }

    /// Replaces each ``LegacyTimeline`` of `keys` with its ``PackedTimeline`` (the newest `capacity`
    /// entries), in Redis alone: reads all of them in one round trip, converts them in another. A
    /// set written between the two is read again, twice at most.
    func convertLegacy(_ keys: [String]) async throws {
        var pending = keys
        for _ in 1...3 where !pending.isEmpty {
            let sets = try await redis.pipeline(pending.map { ["ZRANGE", RedisArgument($0), 0, -1] })
            var calls: [(keys: [String], arguments: [RedisArgument])] = []
            for (key, reply) in zip(pending, sets) {
                guard case .array(let replies) = reply else { continue }  // converted meanwhile, or gone
                let members = replies.compactMap(\.bytes)
                var timeline = LegacyTimeline.timeline(members: members)
                if timeline.ids.count > capacity {
                    timeline.ids.removeFirst(timeline.ids.count - capacity)
                    if timeline.state == .whole { timeline.state = .truncated }
                }
                calls.append(([key], [RedisArgument(members.count), RedisArgument(members.last ?? []), RedisArgument(timeline.bytes)]))
            }
            let replies = try await redis.evaluateEach(TimelineScripts.convertLegacy, calls)
            try RedisError.throwFirstRefusal(in: replies)
            pending = zip(calls, replies).filter { $0.1.int == 0 }.map { $0.0.keys[0] }
        }
    }

    /// Adds `ids` to each of `keys` that exists, trimming each to the capacity, in script calls of
    /// at most `batch` keys pipelined together. With `version` (a ``TimelineKeys/followersVersion(_:)``
    /// key and what it held when `keys` were chosen), each call adds only while the key still holds
    /// that; false when one found it changed (calls that did not may have added). On a Redis Cluster
    /// the version key lies in another slot than most timelines: every call adds, and the key is
    /// read afterwards; false when it changed (the caller takes the tweet back from the timelines
    /// of followers who left, ``Timeline/fanOut``).
    @discardableResult
    func add(_ ids: [Int64], toExisting keys: [String], batch: Int, whileVersion version: (key: String, value: String)? = nil)
        async throws -> Bool
    {
        guard !ids.isEmpty, !keys.isEmpty else { return true }
        let ascending = Array(Set(ids)).sorted()
        let entries = [RedisArgument(PackedTimeline.pack(ascending))] + ascending.map { RedisArgument(LegacyTimeline.member($0)) }
        let limits = [RedisArgument(capacity), RedisArgument(trimLength)]
        if let version, !redis.isCluster {
            // One server: each call checks the version along its adds.
            let replies = try await redis.evaluateEach(
                TimelineScripts.addToExistingIfCurrent,
                keys.chunks(of: batch).map { ([version.key] + $0, limits + [RedisArgument(version.value)] + entries) })
            try RedisError.throwFirstRefusal(in: replies)
            return !replies.contains { $0.int == -1 }
        }
        let replies = try await redis.evaluateEach(
            TimelineScripts.addToExisting, redis.batches(of: keys, upTo: batch).map { ($0, limits + entries) })
        try RedisError.throwFirstRefusal(in: replies)
        guard let version else { return true }
        return try await redis.send(["GET", RedisArgument(version.key)]).string ?? "" == version.value
    }

    /// Removes `ids` from every timeline of `keys` (missing ones are left alone), `batch` per script call.
    func remove(_ ids: [Int64], from keys: [String], batch: Int) async throws {
        guard !ids.isEmpty, !keys.isEmpty else { return }
        let distinct = Array(Set(ids))
        let arguments = [RedisArgument(PackedTimeline.pack(distinct))] + distinct.map { RedisArgument(LegacyTimeline.member($0)) }
        for chunk in redis.batches(of: keys, upTo: batch) {
            _ = try await redis.evaluate(TimelineScripts.remove, keys: chunk, arguments: arguments)
        }
    }

    /// Which of `users` have a home timeline, asked in the pipeline that sends `first` before: one
    /// round trip in all.
    func usersWithHome(_ users: [Int64], after first: [[RedisArgument]]) async throws -> Set<Int64> {
        let checks: [[RedisArgument]] = users.map { ["EXISTS", RedisArgument(TimelineKeys.home($0))] }
        let replies = try await redis.pipeline(first + checks)
        try RedisError.throwFirstRefusal(in: replies)
        return Set(zip(users, replies.dropFirst(first.count)).lazy.filter { $0.1.int == 1 }.map(\.0))
    }
}
