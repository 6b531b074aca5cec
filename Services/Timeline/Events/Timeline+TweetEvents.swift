import AviaryAPI
import EventStreams
import Logging
import RPC

extension TimelineService {
    /// A tweet event's tweet and author.
    struct PostedTweet: Sendable {
        var tweet: Int64
        var author: Int64
    }

    /// Handles a batch of the `tweets` topic in order, a run of events of one type at a time
    /// (tweets of one run are handled concurrently); likes are not the timelines' business.
    func handleTweetEvents(_ events: [DeliveredEvent]) async throws {
        var start = 0
        while start < events.count {
            let type = events[start].event.type
            var end = start + 1
            while end < events.count, events[end].event.type == type { end += 1 }
            let posted = events[start..<end].compactMap { delivered -> PostedTweet? in
                do {
                    if let created = try delivered.event.payload(TweetsTopic.created) {
                        return PostedTweet(tweet: created.tweetId.value, author: created.authorId.value)
                    }
                    if let deleted = try delivered.event.payload(TweetsTopic.deleted) {
                        return PostedTweet(tweet: deleted.tweetId.value, author: deleted.authorId.value)
                    }
                } catch {
                    logger.error(
                        "a tweets event does not have its kind's shape; skipped",
                        metadata: ["events.stream_id": "\(delivered.streamID)", "error": "\(error)"])
                }
                return nil
            }
            switch type {
            case TweetsTopic.created.type: try await fanOut(posted)
            case TweetsTopic.deleted.type: try await withdraw(posted)
            default: break
            }
            start = end
        }
    }

    /// Adds each tweet to its author's home and user timelines and, unless the author is a
    /// celebrity, to the home timeline of each follower that has one.
    func fanOut(_ posted: [PostedTweet]) async throws {
        guard !posted.isEmpty else { return }
        let famous = try await celebrities.classify(posted.map(\.author))
        try await forEach(posted, concurrently: 16) { [self] item in
            let own = [TimelineKeys.home(item.author), TimelineKeys.user(item.author)]
            if famous.contains(item.author) {
                try await cache.add([item.tweet], toExisting: own, batch: settings.fanOutBatch)
            } else {
                try await fanOut(item, alongWith: own)
            }
        }
    }

    /// Adds `item`'s tweet to the sets `own` and to the home set of each of its author's followers,
    /// in one script call for up to ``TimelineSettings/fanOutBatch`` sets, while the list of followers
    /// is current (``FollowerLists``); reads the list again when it is not, takes the tweet back from
    /// those who left it (on a Redis Cluster it may have reached them, ``TimelineCache/add``), and
    /// gives up (the event is retried) when it changed three times in a row.
    private func fanOut(_ item: PostedTweet, alongWith own: [String]) async throws {
        let versionKey = TimelineKeys.followersVersion(item.author)
        var earlier: [Int64] = []
        for _ in 1...3 {
            let list = try await followerLists.list(of: item.author)
            let left = Set(earlier).subtracting(list.followers)
            if !left.isEmpty {
                try await cache.remove([item.tweet], from: left.map(TimelineKeys.home), batch: settings.fanOutBatch)
            }
            let keys = own + list.followers.map(TimelineKeys.home)
            if try await cache.add([item.tweet], toExisting: keys, batch: settings.fanOutBatch, whileVersion: (versionKey, list.version)) {
                return
            }
            earlier = list.followers
            followerLists.forget([item.author])
        }
        throw FollowersKeptChanging(author: item.author)
    }

    /// Removes each deleted tweet from every timeline it may have reached: its author's and every
    /// follower's (celebrities' too: their tweets may have been fanned out before they became one).
    func withdraw(_ deleted: [PostedTweet]) async throws {
        try await forEach(deleted, concurrently: 8) { [self] item in
            try await cache.remove(
                [item.tweet], from: [TimelineKeys.home(item.author), TimelineKeys.user(item.author)], batch: settings.fanOutBatch)
            try await graph.forEachFollowerPage(of: item.author) { followers in
                try await cache.remove([item.tweet], from: followers.map(TimelineKeys.home), batch: settings.fanOutBatch)
            }
        }
    }
}

/// Fan-out found an author's followers changed three times in a row while it added a tweet.
struct FollowersKeptChanging: Error, CustomStringConvertible {
    var author: Int64

    var description: String { "the followers of \(author) kept changing during fan-out; the tweet is fanned out again later" }
}
