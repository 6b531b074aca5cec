import Redis
import RPC

/// Up to a requested number of tweet ids, newest first, and whether older ones exist.
struct TimelineIDs: Sendable {
    var ids: [Int64]
    var more: Bool
}

extension TimelineService {
    /// The newest `count` tweet ids strictly before `before` of each of `authors`, from their cached
    /// user timelines (built when missing, read from the tweets service past the end of a truncated
    /// one). Authors the accounts service does not know are left out.
    func recent(of authors: [Int64], before: Int64?, count: Int) async throws -> [Int64: TimelineIDs] {
        let keys = authors.map(TimelineKeys.user)
        var slices = try await cache.read(keys, before: before, count: count, lifetime: settings.userCacheSeconds)
        let missing = slices.indices.filter { if case .ready = slices[$0].state { false } else { true } }
        var unknown = Set<Int>()
        if !missing.isEmpty {
            let built = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                for index in missing {
                    group.addTask { (index, try await buildUserTimeline(authors[index])) }
                }
                var built: [Int: Bool] = [:]
                for try await (index, exists) in group { built[index] = exists }
                return built
            }
            unknown = Set(missing.filter { built[$0] == false })
            let rebuilt = missing.filter { built[$0] == true }
            let again = try await cache.read(
                rebuilt.map { keys[$0] }, before: before, count: count, lifetime: settings.userCacheSeconds)
            for (index, slice) in zip(rebuilt, again) { slices[index] = slice }
        }
        var result: [Int64: TimelineIDs] = [:]
        for (index, slice) in slices.enumerated() where !unknown.contains(index) {
            let author = authors[index]
            if slice.ids.count == count {
                result[author] = TimelineIDs(ids: slice.ids, more: true)
            } else if slice.state == .ready(whole: true) {
                result[author] = TimelineIDs(ids: slice.ids, more: false)
            } else {
                // The page runs past the oldest cached entry of a truncated set (or the set vanished
                // since it was built): the tweets service has the rest.
                let ids = try await tweets.recentIDs(of: [author], limit: count, before: before)
                result[author] = TimelineIDs(ids: ids, more: ids.count == count)
            }
        }
        return result
    }

    /// Builds `author`'s user timeline set unless it is complete; false when no such user exists.
    func buildUserTimeline(_ author: Int64) async throws -> Bool {
        let limit = min(settings.capacity, TweetsPeer.maximumRecent)
        return try await builder.build(TimelineKeys.user(author), lifetime: settings.userCacheSeconds) { [tweets, accounts] in
            let ids = try await tweets.recentIDs(of: [author], limit: limit)
            if ids.isEmpty, try await !accounts.exists(author, context: nil) { return nil }
            return TimelineBuilder.Contents(ids: ids, whole: ids.count < limit)
        }
    }
}

