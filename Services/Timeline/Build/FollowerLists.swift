import EventStreams
import Logging
import Redis

/// The followers of authors who posted lately, kept in this process (``LocalCopy``) so that fan-out
/// does not ask social-graph, and social-graph Postgres, for the same list at every tweet.
///
/// A list carries the value its author's ``TimelineKeys/followersVersion(_:)`` key held before the
/// list was read. The graph-event consumer increments that key, and announces the author, before it
/// merges a follow into the follower's home set or takes an unfollow out of it; fan-out adds from a
/// list only while the key still holds the list's value, checked in the script that adds
/// (``TimelineCache/add(_:toExisting:batch:whileVersion:)``). So a list read before a change is never
/// used after that change was handled, on any instance, even before the announcement reaches it:
/// fan-out either went first, and the merge or unmerge that follows sees the tweet, or finds the
/// key changed and reads the list again.
struct FollowerLists: Sendable {
    let redis: RedisClient
    let graph: GraphPeer
    /// This process's copy of the lists read lately, if it keeps one.
    let local: LocalCopy<FollowerList>?

    /// Keeps up to `capacity` authors' lists in this process (none with 0).
    init(redis: RedisClient, graph: GraphPeer, capacity: Int, logger: Logger) {
        self.redis = redis
        self.graph = graph
        local =
            capacity == 0
            ? nil : LocalCopy(.followerLists, redis: redis, capacity: capacity, lifetime: Self.lifetime, logger: logger)
    }

    /// Authors' lists are held for this long at most.
    static let lifetime = Duration.seconds(600)
    /// Longer lists are not held (8 KiB of ids at most per author): fanning a tweet out to that many
    /// sets costs Redis far more than reading the list.
    static let longestHeld = 1000
    /// A version key lives this long after the last change of its author's followers: far longer
    /// than a list is held, so no held list can see the key come back to the value it was read at.
    static let versionLifetime = 86_400

    /// The followers of `author`, and the version of the list.
    struct FollowerList: Sendable {
        var followers: [Int64]
        var version: String
    }

    /// `author`'s followers: the list held here, else the version then every page of
    /// `graph.followerIds` (held unless longer than ``longestHeld``).
    func list(of author: Int64) async throws -> FollowerList {
        let (held, epoch) = local?.values([author]) ?? ([:], nil)
        if let list = held[author] { return list }
        let version = try await redis.send(["GET", RedisArgument(TimelineKeys.followersVersion(author))]).string ?? ""
        var followers: [Int64] = []
        try await graph.forEachFollowerPage(of: author) { followers += $0 }
        let list = FollowerList(followers: followers, version: version)
        if followers.count <= Self.longestHeld { local?.keep([(key: author, value: list)], since: epoch) }
        return list
    }

    /// Drops the lists of `authors` from this process: they changed, or fan-out found one out of date.
    func forget(_ authors: [Int64]) {
        local?.forget(authors)
    }

    /// The commands that mark the follower lists of `authors` as changed, for the graph-event
    /// consumer's first pipeline: each version key incremented (and kept for ``versionLifetime``),
    /// then one announcement to every process's copy.
    func changeCommands(for authors: [Int64]) -> [[RedisArgument]] {
        guard !authors.isEmpty else { return [] }
        return authors.flatMap { author -> [[RedisArgument]] in
            let key = RedisArgument(TimelineKeys.followersVersion(author))
            return [["INCR", key], ["EXPIRE", key, RedisArgument(Self.versionLifetime)]]
        } + [LocalCopyKind.followerLists.announcement(of: authors, on: redis.configuration)]
    }
}

extension LocalCopyKind {
    /// Authors' follower lists (``FollowerLists``): the graph-event consumer announces the followees
    /// of the follows and unfollows it handles.
    static let followerLists = LocalCopyKind(
        service: "timeline", name: "follower_lists", channelPrefix: "aviary:timeline:forget-followers")
}
