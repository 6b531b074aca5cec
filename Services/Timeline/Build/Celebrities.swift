import Locking
import Redis
import ServiceKit

/// Authors with more followers than the threshold. Fan-out skips them (a tweet of theirs would
/// mean writing to every follower's set); home reads merge their recent tweets instead, from their
/// user timeline sets.
///
/// Who is a celebrity is decided once, by follower count, and kept in the set
/// `aviary:timeline:celebrities`: a tweet fan-out skipped stays visible because its author stays in
/// the set. Each user's list of followed celebrities is cached with a generation number, and a new
/// celebrity bumps the generation, so no cached list misses them.
struct Celebrities: Sendable {
    let redis: RedisClient
    let graph: GraphPeer
    /// More followers than this makes a celebrity.
    let threshold: Int
    /// Lifetime of a cached list of followed celebrities, in seconds.
    let cacheLifetime: Int
    /// The authors lately found at or under the threshold, so that fan-out does not ask
    /// social-graph for the count of the same author at every tweet.
    let ordinary: OrdinaryAuthors

    /// Which of `authors` are celebrities: already in the set, or now over the threshold (then added).
    func classify(_ authors: [Int64]) async throws -> Set<Int64> {
        let unique = Array(Set(authors))
        guard !unique.isEmpty else { return [] }
        var celebrities = Set<Int64>()
        var unknown: [Int64] = []
        for chunk in unique.chunks(of: 1000) {
            let reply = try await redis.send(
                ["SMISMEMBER", RedisArgument(TimelineKeys.celebrities)] + chunk.map { RedisArgument($0) })
            for (author, member) in zip(chunk, reply.array ?? []) {
                if member.int == 1 { celebrities.insert(author) } else { unknown.append(author) }
            }
        }
        let uncounted = ordinary.uncounted(among: unknown)
        guard !uncounted.isEmpty else { return celebrities }
        let counts = try await graph.followerCounts(of: uncounted)
        var newcomers: [Int64] = []
        var stillOrdinary: [Int64] = []
        for author in uncounted {
            if (counts[author] ?? 0) > Int64(threshold) { newcomers.append(author) } else { stillOrdinary.append(author) }
        }
        ordinary.remember(stillOrdinary)
        if !newcomers.isEmpty {
            _ = try await redis.evaluate(
                TimelineScripts.addCelebrities, keys: [TimelineKeys.celebrities, TimelineKeys.celebrityGeneration],
                arguments: newcomers.map { RedisArgument($0) })
            celebrities.formUnion(newcomers)
        }
        return celebrities
    }

    /// The commands whose replies ``followed(by:generation:cached:)`` reads, for the caller's pipeline.
    static func cacheCommands(for user: Int64) -> [[RedisArgument]] {
        [["GET", RedisArgument(TimelineKeys.celebrityGeneration)], ["GET", RedisArgument(TimelineKeys.followedCelebrities(user))]]
    }

    /// The celebrities `user` follows: the cached list when it is of the current generation, else
    /// computed (the celebrity set against `graph.relationships`) and cached.
    func followed(by user: Int64, generation: RESPValue, cached: RESPValue) async throws -> [Int64] {
        let current = generation.int ?? 0
        if let text = cached.string, let colon = text.firstIndex(of: ":"), Int(text[..<colon]) == current {
            return text[text.index(after: colon)...].split(separator: ",").compactMap { Int64($0) }
        }
        return try await refresh(user)
    }

    /// Computes and caches the celebrities `user` follows.
    func refresh(_ user: Int64) async throws -> [Int64] {
        // The generation is read before the set: a celebrity added in between makes the cached
        // list stale at once rather than missing them.
        let replies = try await redis.pipeline([
            ["GET", RedisArgument(TimelineKeys.celebrityGeneration)], ["SMEMBERS", RedisArgument(TimelineKeys.celebrities)],
        ])
        let generation = replies[0].int ?? 0
        let everyone = (replies[1].array ?? []).compactMap { $0.string.flatMap { Int64($0) } }.filter { $0 != user }
        let followed = everyone.isEmpty ? [] : try await graph.followed(by: user, among: everyone)
        try await store(followed, for: user, generation: generation)
        return followed
    }

    /// Caches `followed` as `user`'s list of generation `generation`.
    func store(_ followed: [Int64], for user: Int64, generation: Int) async throws {
        let text = "\(generation):" + followed.map(String.init).joined(separator: ",")
        _ = try await redis.send([
            "SET", RedisArgument(TimelineKeys.followedCelebrities(user)), RedisArgument(text), "EX", RedisArgument(cacheLifetime),
        ])
    }

    /// The command that drops the cached lists of `users` (after they followed or unfollowed
    /// someone), for the caller's pipeline.
    static func forgetCommand(for users: [Int64]) -> [RedisArgument] {
        ["DEL"] + users.map { RedisArgument(TimelineKeys.followedCelebrities($0)) }
    }

    /// The current generation.
    func generation() async throws -> Int {
        try await redis.send(["GET", RedisArgument(TimelineKeys.celebrityGeneration)]).int ?? 0
    }
}

/// Authors counted at or under the celebrity threshold, each trusted for `recount` after its count.
/// An author who crosses the threshold within that time is fanned out a little longer: correct
/// (their earlier tweets are in their followers' sets already), only costlier.
final class OrdinaryAuthors: Sendable {
    private let recount: Duration
    private let capacity: Int
    private let counted = Locked<[Int64: ContinuousClock.Instant]>([:])

    init(recount: Duration, capacity: Int = 100_000) {
        self.recount = recount
        self.capacity = capacity
    }

    /// Those of `authors` not counted within `recount`.
    func uncounted(among authors: [Int64]) -> [Int64] {
        let now = ContinuousClock.now
        return counted.withLock { counted in
            authors.filter { author in counted[author].map { now - $0 >= recount } ?? true }
        }
    }

    /// Notes that `authors` were just counted at or under the threshold.
    func remember(_ authors: [Int64]) {
        guard !authors.isEmpty else { return }
        let now = ContinuousClock.now
        counted.withLock { counted in
            if counted.count + authors.count > capacity {
                counted = counted.filter { now - $0.value < recount }
                if counted.count + authors.count > capacity { counted.removeAll(keepingCapacity: true) }
            }
            for author in authors { counted[author] = now }
        }
    }
}
