import Redis
import ServiceKit

/// One read of a timeline set: its state and up to the requested number of ids, newest first.
struct TimelineSlice: Sendable {
    var state: TimelineState
    var ids: [Int64]
}

/// The timeline sorted sets in Redis (see ``TimelineKeys`` for their layout).
struct TimelineCache: Sendable {
    let redis: RedisClient
    let capacity: Int

    /// Reads the newest `count` entries strictly before `before` of each set in `keys`, in one round
    /// trip, and keeps each set that exists for at least `lifetime` seconds from now (``renewLeases``).
    func read(_ keys: [String], before: Int64?, count: Int, lifetime: Int) async throws -> [TimelineSlice] {
        var commands: [[RedisArgument]] = []
        commands.reserveCapacity(keys.count * 3)
        for key in keys {
            commands.append(["ZRANGE", RedisArgument(key), 0, 0])
            commands.append(Self.rangeCommand(key, before: before, count: count))
            commands.append(["TTL", RedisArgument(key)])
        }
        let replies = try await redis.pipeline(commands)
        let slices = try Self.slices(of: replies, count: keys.count, stride: 3)
        try await renewLeases(
            keys.indices.map { (keys[$0], replies[$0 * 3 + 2]) }, lifetime: lifetime)
        return slices
    }

    /// A set that is read stays for at least `lifetime` seconds after the read: each of `leases`
    /// (a key and its `TTL` reply) with less than that left is given `lifetime` plus a tenth, in one
    /// pipeline. So a set read all day is written to (and Redis's append-only file with it) once
    /// per tenth of its lifetime, not on every read. Sets that do not exist are left alone.
    func renewLeases(_ leases: [(key: String, left: RESPValue)], lifetime: Int) async throws {
        let lease = lifetime + lifetime / 10
        let renewals: [[RedisArgument]] = leases.compactMap { entry in
            guard case .integer(let seconds) = entry.left, seconds >= 0, seconds < lifetime else { return nil }
            return ["EXPIRE", RedisArgument(entry.key), RedisArgument(lease)]
        }
        guard !renewals.isEmpty else { return }
        _ = try await redis.pipeline(renewals)
    }

    /// `ZRANGE key (<before> (<sentinels> BYLEX REV LIMIT 0 count`: the newest real entries.
    static func rangeCommand(_ key: String, before: Int64?, count: Int) -> [RedisArgument] {
        [
            "ZRANGE", RedisArgument(key), RedisArgument(TimelineMember.upperBound(before: before)),
            RedisArgument(TimelineMember.lowestEntry), "BYLEX", "REV", "LIMIT", 0, RedisArgument(count),
        ]
    }

    /// The slices in replies laid out as `[ZRANGE 0 0, ZRANGE BYLEX, …]` per key, `stride` replies per key.
    static func slices(of replies: [RESPValue], count: Int, stride: Int) throws -> [TimelineSlice] {
        try (0..<count).map { index in
            let lowest = replies[index * stride]
            let range = replies[index * stride + 1]
            try RedisError.throwFirstRefusal(in: [lowest, range])
            let state = TimelineState(lowestMember: lowest.array?.first?.bytes)
            let ids = (range.array ?? []).compactMap { $0.bytes.flatMap(TimelineMember.decode) }
            return TimelineSlice(state: state, ids: ids)
        }
    }

    /// Adds `ids` to each of `keys` that exists, trimming each to the capacity, in script calls of
    /// at most `batch` keys pipelined together. With `version` (a ``TimelineKeys/followersVersion(_:)``
    /// key and what it held when `keys` were chosen), each call adds only while the key still holds
    /// that; false when one found it changed (calls that did not may have added).
    @discardableResult
    func add(_ ids: [Int64], toExisting keys: [String], batch: Int, whileVersion version: (key: String, value: String)? = nil)
        async throws -> Bool
    {
        guard !ids.isEmpty, !keys.isEmpty else { return true }
        let script = version == nil ? TimelineScripts.addToExisting : TimelineScripts.addToExistingIfCurrent
        let leadingKeys = version.map { [$0.key] } ?? []
        let arguments =
            [RedisArgument(capacity)] + (version.map { [RedisArgument($0.value)] } ?? [])
            + ids.map { RedisArgument(TimelineMember.encode($0)) }
        let chunks = keys.chunks(of: batch)
        var replies: [RESPValue]
        if chunks.count == 1 {
            replies = [try await redis.evaluate(script, keys: leadingKeys + keys, arguments: arguments)]
        } else {
            let calls = chunks.map { chunk -> [RedisArgument] in
                ["EVALSHA", RedisArgument(script.sha1), RedisArgument(leadingKeys.count + chunk.count)]
                    + (leadingKeys + chunk).map { RedisArgument($0) } + arguments
            }
            replies = try await redis.pipeline(calls)
            if replies.contains(where: { $0.errorMessage?.hasPrefix("NOSCRIPT") == true }) {
                // Redis lost its script cache (restart, SCRIPT FLUSH): load it once and go again.
                _ = try await redis.send(["SCRIPT", "LOAD", RedisArgument(script.source)])
                replies = try await redis.pipeline(calls)
            }
        }
        try RedisError.throwFirstRefusal(in: replies)
        return !replies.contains { $0.int == -1 }
    }

    /// Removes `ids` from every set of `keys` (missing sets are left alone), `batch` sets per pipeline.
    func remove(_ ids: [Int64], from keys: [String], batch: Int) async throws {
        guard !ids.isEmpty, !keys.isEmpty else { return }
        let members = ids.map { RedisArgument(TimelineMember.encode($0)) }
        for chunk in keys.chunks(of: batch) {
            let replies = try await redis.pipeline(chunk.map { ["ZREM", RedisArgument($0)] + members })
            try RedisError.throwFirstRefusal(in: replies)
        }
    }

    /// Which of `users` have a home set, asked in the pipeline that sends `first` before: one round
    /// trip in all.
    func usersWithHome(_ users: [Int64], after first: [[RedisArgument]]) async throws -> Set<Int64> {
        let checks: [[RedisArgument]] = users.map { ["EXISTS", RedisArgument(TimelineKeys.home($0))] }
        let replies = try await redis.pipeline(first + checks)
        try RedisError.throwFirstRefusal(in: replies)
        return Set(zip(users, replies.dropFirst(first.count)).lazy.filter { $0.1.int == 1 }.map(\.0))
    }
}


