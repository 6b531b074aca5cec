import Logging
import Redis
import RPC

extension TimelineService {
    /// The newest `count` ids strictly before `before` of `user`'s home timeline: their set merged
    /// with the user timelines of the celebrities they follow. A missing set is built at once when a
    /// build slot is free, and the page comes from what the build read; when none is free, or the
    /// set is being built, the build waits its turn in the background and this page comes from the
    /// services (``homeCandidatesWithoutRedis``), so a cold cache costs a read one page's queries,
    /// not a build. So does a page that runs past the oldest entry of a trimmed set: the set no
    /// longer holds what its followees posted before, and the celebrities' timelines alone would
    /// make the rest of the timeline theirs only.
    func homeCandidates(of user: Int64, before: Int64?, count: Int, context: RPCContext) async throws -> TimelineIDs {
        // One round trip: the set's state, the page, how long it is kept (an active user's set never
        // expires: a read renews it for the inactivity period, so fan-out skips only users inactive
        // for longer), and the cached list of followed celebrities.
        let read = try await cache.read(
            [TimelineKeys.home(user)], before: before, count: count, above: Self.repostWindow, lifetime: settings.inactiveSeconds,
            along: Celebrities.cacheCommands(for: user))
        let home = read.slices[0]
        guard case .ready = home.state else {
            if home.state == .missing, let built = await buildHomeNow(of: user),
                let own = built.contents.page(before: before, count: count)
            {
                return try await merged(own, withCelebrities: built.celebrities, before: before, count: count)
            }
            buildHomeLater(of: user)
            return try await homeCandidatesWithoutRedis(of: user, before: before, count: count, context: context)
        }
        if home.ids.count < count, home.state == .ready(whole: false) {
            return try await homeCandidatesWithoutRedis(of: user, before: before, count: count, context: context)
        }
        let followed = try await celebrities.followed(by: user, generation: read.extra[0], cached: read.extra[1])
        var candidates = try await merged(TimelineIDs(ids: home.ids, more: home.ids.count == count), withCelebrities: followed, before: before, count: count)
        candidates.above = home.above
        return candidates
    }

    /// `own` (a page of the home set) merged with the pages of the celebrities `followed`.
    private func merged(_ own: TimelineIDs, withCelebrities followed: [Int64], before: Int64?, count: Int) async throws -> TimelineIDs {
        guard !followed.isEmpty else { return own }
        let theirs = try await recent(ofAll: followed, before: before, count: count)
        var more = own.more || theirs.more
        var ids = Set(own.ids).union(theirs.ids).sorted(by: >)
        if ids.count > count {
            ids.removeLast(ids.count - count)
            more = true
        }
        return TimelineIDs(ids: ids, more: more)
    }

    /// What a build of a home set reads: the newest tweets of the user and of everyone they follow
    /// who is not a celebrity (those are merged at read time), and the celebrities they follow (whose
    /// list it caches).
    private struct HomeSource: Sendable {
        var contents: TimelineBuilder.Contents
        var celebrities: [Int64]
    }

    private func readHomeSource(of user: Int64) async throws -> HomeSource {
        let limit = min(settings.capacity, TweetsPeer.maximumRecent)
        let generation = try await celebrities.generation()
        let following = try await graph.following(of: user)
        let famous = try await celebrities.classify(following)
        let ids = try await tweets.recentIDs(of: [user] + following.filter { !famous.contains($0) }, limit: limit)
        let followed = following.filter { famous.contains($0) }
        try await celebrities.store(followed, for: user, generation: generation)
        return HomeSource(contents: TimelineBuilder.Contents(ids: ids, whole: ids.count < limit), celebrities: followed)
    }

    /// Rebuilds `user`'s home set in the background unless it is complete.
    func buildHomeLater(of user: Int64) {
        builder.buildLater(TimelineKeys.home(user), lifetime: settings.inactiveSeconds) { [self] in
            try await readHomeSource(of: user).contents
        }
    }

    /// Builds `user`'s home set now when a build slot is free, and returns what the build read; nil
    /// when no slot was free or the build failed (the caller then answers from the services).
    private func buildHomeNow(of user: Int64) async -> HomeSource? {
        do {
            return try await builder.buildNowIfFree(
                TimelineKeys.home(user), lifetime: settings.inactiveSeconds, source: { [self] in try await readHomeSource(of: user) },
                contents: \.contents)
        } catch {
            logger.warning("a timeline build failed", metadata: ["timeline.key": "\(TimelineKeys.home(user))", "error": "\(error)"])
            return nil
        }
    }

    /// The same as ``homeCandidates(of:before:count:context:)`` straight from the services: while
    /// Redis is down, and past the oldest entry of a trimmed set.
    func homeCandidatesWithoutRedis(of user: Int64, before: Int64?, count: Int, context: RPCContext) async throws -> TimelineIDs {
        let following = try await graph.following(of: user, context: context)
        let ids = try await tweets.recentIDs(of: [user] + following, limit: count, before: before, context: context)
        return TimelineIDs(ids: ids, more: ids.count == count)
    }
}
