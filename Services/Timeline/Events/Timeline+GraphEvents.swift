import Logging
import RPC
import ServiceKit

extension Timeline {
    /// Handles a batch of the `graph` topic in order.
    func handleGraphEvents(_ events: [DeliveredEvent]) async throws {
        for delivered in events {
            let ids = EventIDs(event: delivered)
            guard let follower = ids.id("followerId"), let followee = ids.id("followeeId") else {
                logger.error("a graph event lacks followerId or followeeId; skipped", metadata: ["events.stream_id": "\(delivered.streamID)"])
                continue
            }
            switch delivered.event.type {
            case "follow": try await merge(followee, into: follower)
            case "unfollow": try await unmerge(followee, from: follower)
            default: break
            }
        }
    }

    /// After `follower` followed `followee`: the followee's recent tweets join the follower's home
    /// set (if it exists; else its rebuild includes them), or, for a celebrity, their cached list of
    /// followed celebrities is dropped so the next read merges the newcomer.
    func merge(_ followee: Int64, into follower: Int64) async throws {
        try await celebrities.forget(follower)
        let home = TimelineKeys.home(follower)
        guard try await cache.exists(home), try await celebrities.classify([followee]).isEmpty else { return }
        let ids = try await tweets.recentIDs(of: [followee], limit: min(settings.capacity, TweetsPeer.maximumRecent))
        try await cache.add(ids, toExisting: [home], batch: 1)
    }

    /// After `follower` unfollowed `followee`: the followee's recent tweets leave the follower's home set.
    func unmerge(_ followee: Int64, from follower: Int64) async throws {
        try await celebrities.forget(follower)
        let home = TimelineKeys.home(follower)
        guard try await cache.exists(home) else { return }
        let ids = try await tweets.recentIDs(of: [followee], limit: TweetsPeer.maximumRecent)
        try await cache.remove(ids, from: [home], batch: 1)
    }
}
