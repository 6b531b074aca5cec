import Redis
import RPC

/// Up to a requested number of tweet ids, newest first, and whether older ones exist.
struct TimelineIDs: Sendable {
    var ids: [Int64]
    var more: Bool
}

extension TimelineService {
    /// The newest `count` tweet ids strictly before `before` of each of `authors`, from their cached
    /// user timelines (read from the tweets service past the end of a truncated one). A missing set
    /// is built in the background and its page read from the tweets service meanwhile. Authors the
    /// accounts service does not know are left out.
    func recent(of authors: [Int64], before: Int64?, count: Int) async throws -> [Int64: TimelineIDs] {
        let keys = authors.map(TimelineKeys.user)
        let slices = try await cache.read(keys, before: before, count: count, lifetime: settings.userCacheSeconds).slices
        var result: [Int64: TimelineIDs] = [:]
        var missing: [Int64] = []
        for (index, slice) in slices.enumerated() {
            let author = authors[index]
            guard case .ready = slice.state else {
                buildUserTimelineLater(author)
                missing.append(author)
                continue
            }
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
        let pages = try await withThrowingTaskGroup(of: (Int64, [Int64]).self) { group in
            for author in missing {
                group.addTask { [tweets] in (author, try await tweets.recentIDs(of: [author], limit: count, before: before)) }
            }
            return try await group.reduce(into: [Int64: [Int64]]()) { $0[$1.0] = $1.1 }
        }
        // An empty page may be an unknown author's: the accounts service is asked once for all of them.
        let empty = pages.filter { $0.value.isEmpty }.map(\.key)
        let known = empty.isEmpty ? [] : try await accounts.existing(empty, context: nil)
        for (author, ids) in pages where !ids.isEmpty || known.contains(author) {
            result[author] = TimelineIDs(ids: ids, more: ids.count == count)
        }
        return result
    }

    /// Builds `author`'s user timeline set in the background unless it is complete; no set is made
    /// for a user who does not exist.
    func buildUserTimelineLater(_ author: Int64) {
        let limit = min(settings.capacity, TweetsPeer.maximumRecent)
        builder.buildLater(TimelineKeys.user(author), lifetime: settings.userCacheSeconds) { [tweets, accounts] in
            let ids = try await tweets.recentIDs(of: [author], limit: limit)
            if ids.isEmpty, try await !accounts.exists(author, context: nil) { return nil }
            return TimelineBuilder.Contents(ids: ids, whole: ids.count < limit)
        }
    }
}

