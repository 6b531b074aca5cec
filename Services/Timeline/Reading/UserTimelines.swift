import Logging
import Redis
import RPC

/// Up to a requested number of tweet ids, newest first, and whether older ones exist.
struct TimelineIDs: Sendable {
    var ids: [Int64]
    var more: Bool
    /// For a home page after a cursor, the entries of the home set from the cursor up (what the
    /// pages before ended with), when the set was read.
    var above: [Int64] = []
}

extension TimelineService {
    /// The newest `count` tweet ids strictly before `before` of `author`, from their cached user
    /// timeline; a missing one is built at once when a build slot is free, and the page comes from
    /// what the build read. Otherwise from the tweets service, when the set is missing or being built
    /// (its build waits its turn in the background) or the page runs past the end of a truncated one.
    /// Nil when the accounts service does not know the author.
    func recent(of author: Int64, before: Int64?, count: Int) async throws -> TimelineIDs? {
        let cached = try await cachedPages(of: [author], before: before, count: count, buildingLater: false)
        if let page = cached.pages[author] { return page }
        if cached.missing.contains(author) {
            if let built = await buildUserTimelineNow(author), let page = built.page(before: before, count: count) { return page }
            buildUserTimelineLater(author)
        }
        let ids = try await tweets.recentIDs(of: [author], limit: count, before: before)
        // An empty page may be an unknown author's.
        if ids.isEmpty, try await !accounts.exists(author, context: nil) { return nil }
        return TimelineIDs(ids: ids, more: ids.count == count)
    }

    /// The newest `count` tweet ids strictly before `before` of `authors` together (the celebrities a
    /// home timeline merges), newest first: the cached pages, and one call of the tweets service for
    /// every author whose page is not cached, however many went cold together.
    func recent(ofAll authors: [Int64], before: Int64?, count: Int) async throws -> TimelineIDs {
        let cached = try await cachedPages(of: authors, before: before, count: count)
        var merged = Set(cached.pages.values.flatMap(\.ids))
        var more = cached.pages.values.contains { $0.more }
        if !cached.uncached.isEmpty {
            let ids = try await tweets.recentIDs(of: cached.uncached, limit: count, before: before)
            merged.formUnion(ids)
            more = more || ids.count == count
        }
        var ids = merged.sorted(by: >)
        if ids.count > count {
            ids.removeLast(ids.count - count)
            more = true
        }
        return TimelineIDs(ids: ids, more: more)
    }

    /// The pages the cached user timelines of `authors` answer, and the authors they cannot answer
    /// for: missing or being built (a build is started; with `buildingLater` false, a missing one's
    /// is the caller's to start, and `missing` lists them) or read past the oldest entry of a
    /// truncated timeline (the set vanished since it was built, or the page goes deeper than it keeps).
    private func cachedPages(of authors: [Int64], before: Int64?, count: Int, buildingLater: Bool = true) async throws
        -> (pages: [Int64: TimelineIDs], uncached: [Int64], missing: [Int64])
    {
        let slices = try await cache.read(authors.map(TimelineKeys.user), before: before, count: count, lifetime: settings.userCacheSeconds)
            .slices
        var pages: [Int64: TimelineIDs] = [:]
        var uncached: [Int64] = []
        var missing: [Int64] = []
        for (author, slice) in zip(authors, slices) {
            switch slice.state {
            case .ready where slice.ids.count == count: pages[author] = TimelineIDs(ids: slice.ids, more: true)
            case .ready(whole: true): pages[author] = TimelineIDs(ids: slice.ids, more: false)
            case .ready(whole: false): uncached.append(author)
            case .missing where !buildingLater:
                missing.append(author)
                uncached.append(author)
            case .missing, .building:
                buildUserTimelineLater(author)
                uncached.append(author)
            }
        }
        return (pages, uncached, missing)
    }

    /// Builds `author`'s user timeline set in the background unless it is complete; no set is made
    /// for a user who does not exist.
    func buildUserTimelineLater(_ author: Int64) {
        builder.buildLater(TimelineKeys.user(author), lifetime: settings.userCacheSeconds, source: userTimelineSource(author))
    }

    /// Builds `author`'s user timeline set now when a build slot is free, and returns what the build
    /// read; nil when no slot was free, the author does not exist, or the build failed.
    private func buildUserTimelineNow(_ author: Int64) async -> TimelineBuilder.Contents? {
        do {
            return try await builder.buildNowIfFree(
                TimelineKeys.user(author), lifetime: settings.userCacheSeconds, source: userTimelineSource(author), contents: { $0 })
        } catch {
            logger.warning("a timeline build failed", metadata: ["timeline.key": "\(TimelineKeys.user(author))", "error": "\(error)"])
            return nil
        }
    }

    /// What a build of `author`'s user timeline reads: their newest tweets; nil for a user who does not exist.
    private func userTimelineSource(_ author: Int64) -> @Sendable () async throws -> TimelineBuilder.Contents? {
        let limit = min(settings.capacity, TweetsPeer.maximumRecent)
        return { [tweets, accounts] in
            let ids = try await tweets.recentIDs(of: [author], limit: limit)
            if ids.isEmpty, try await !accounts.exists(author, context: nil) { return nil }
            return TimelineBuilder.Contents(ids: ids, whole: ids.count < limit)
        }
    }
}
