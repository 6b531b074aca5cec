import Redis
import RPC

extension TimelineService {
    /// The newest `count` ids strictly before `before` of `user`'s home timeline: their set merged
    /// with the user timelines of the celebrities they follow. A set that is missing (or being built)
    /// is built in the background and this page comes from the services (``homeCandidatesWithoutRedis``),
    /// so a cold cache costs a read one page's queries, not a build. So does a page that runs past
    /// the oldest entry of a trimmed set: the set no longer holds what its followees posted before,
    /// and the celebrities' timelines alone would make the rest of the timeline theirs only.
    func homeCandidates(of user: Int64, before: Int64?, count: Int, context: RPCContext) async throws -> TimelineIDs {
        // One round trip: the set's state, the page, how long it is kept (an active user's set never
        // expires: a read renews it for the inactivity period, so fan-out skips only users inactive
        // for longer), and the cached list of followed celebrities.
        let read = try await cache.read(
            [TimelineKeys.home(user)], before: before, count: count, lifetime: settings.inactiveSeconds,
            along: Celebrities.cacheCommands(for: user))
        let home = read.slices[0]
        guard case .ready = home.state else {
            buildHomeLater(of: user)
            return try await homeCandidatesWithoutRedis(of: user, before: before, count: count, context: context)
        }
        if home.ids.count < count, home.state == .ready(whole: false) {
            return try await homeCandidatesWithoutRedis(of: user, before: before, count: count, context: context)
        }
        let followed = try await celebrities.followed(by: user, generation: read.extra[0], cached: read.extra[1])
        guard !followed.isEmpty else { return TimelineIDs(ids: home.ids, more: home.ids.count == count) }

        let theirs = try await recent(ofAll: followed, before: before, count: count)
        var more = home.ids.count == count || theirs.more
        var ids = Set(home.ids).union(theirs.ids).sorted(by: >)
        if ids.count > count {
            ids.removeLast(ids.count - count)
            more = true
        }
        return TimelineIDs(ids: ids, more: more)
    }

    /// Rebuilds `user`'s home set in the background unless it is complete: the newest tweets of the
    /// user and of everyone they follow who is not a celebrity (those are merged at read time), and
    /// the cached list of the celebrities they follow.
    func buildHomeLater(of user: Int64) {
        let limit = min(settings.capacity, TweetsPeer.maximumRecent)
        builder.buildLater(TimelineKeys.home(user), lifetime: settings.inactiveSeconds) { [self] in
            let generation = try await celebrities.generation()
            let following = try await graph.following(of: user)
            let famous = try await celebrities.classify(following)
            let ids = try await tweets.recentIDs(of: [user] + following.filter { !famous.contains($0) }, limit: limit)
            try await celebrities.store(following.filter { famous.contains($0) }, for: user, generation: generation)
            return TimelineBuilder.Contents(ids: ids, whole: ids.count < limit)
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
