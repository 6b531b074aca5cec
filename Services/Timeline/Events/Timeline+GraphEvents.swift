import AviaryAPI
import EventStreams
import Logging
import RPC

extension TimelineService {
    /// Handles a batch of the `graph` topic in order.
    ///
    /// One pipeline first drops every follower's cached list of followed celebrities, marks every
    /// followee's list of followers as changed (``FollowerLists``) and asks which followers have a
    /// home set: a follower without one (never read, evicted, inactive) needs nothing more, as its
    /// rebuild reads the graph as it is now. Only the changes of followers with a home
    /// set then cost their own round trips, in order, so a follow and an unfollow of the same edge in
    /// one batch end as the later one left it.
    func handleGraphEvents(_ events: [DeliveredEvent]) async throws {
        var changes: [FollowChange] = []
        for delivered in events {
            do {
                if let edge = try delivered.event.payload(GraphTopic.followed) {
                    changes.append(FollowChange(follower: edge.followerId.value, followee: edge.followeeId.value, follows: true))
                } else if let edge = try delivered.event.payload(GraphTopic.unfollowed) {
                    changes.append(FollowChange(follower: edge.followerId.value, followee: edge.followeeId.value, follows: false))
                } else if let mute = try delivered.event.payload(GraphTopic.muted) {
                    // To a home set a mute is an unfollow, and its end (sent only while the muter
                    // follows) a follow; the id pages of fan-out and rebuilds leave muters out.
                    changes.append(FollowChange(follower: mute.muterId.value, followee: mute.mutedId.value, follows: false))
                } else if let unmute = try delivered.event.payload(GraphTopic.unmuted) {
                    changes.append(FollowChange(follower: unmute.muterId.value, followee: unmute.mutedId.value, follows: true))
                }
            } catch {
                logger.error(
                    "a graph event does not have its kind's shape; skipped",
                    metadata: ["events.stream_id": "\(delivered.streamID)", "error": "\(error)"])
            }
        }
        guard !changes.isEmpty else { return }
        let followers = Array(Set(changes.map(\.follower)))
        let followees = Array(Set(changes.map(\.followee)))
        let withHome = try await cache.usersWithHome(
            followers, after: [Celebrities.forgetCommand(for: followers)] + followerLists.changeCommands(for: followees))
        followerLists.forget(followees)
        for change in changes where withHome.contains(change.follower) {
            if change.follows {
                try await merge(change.followee, into: change.follower)
            } else {
                try await unmerge(change.followee, from: change.follower)
            }
        }
    }

    /// After `follower` followed `followee`: the followee's recent tweets join the follower's home
    /// set, unless the followee is a celebrity (their tweets are merged at read time).
    private func merge(_ followee: Int64, into follower: Int64) async throws {
        guard try await celebrities.classify([followee]).isEmpty else { return }
        let ids = try await tweets.recentIDs(of: [followee], limit: min(settings.capacity, TweetsPeer.maximumRecent))
        try await cache.add(ids, toExisting: [TimelineKeys.home(follower)], batch: 1)
    }

    /// After `follower` unfollowed `followee`: the followee's recent tweets leave the follower's home set.
    private func unmerge(_ followee: Int64, from follower: Int64) async throws {
        let ids = try await tweets.recentIDs(of: [followee], limit: TweetsPeer.maximumRecent)
        try await cache.remove(ids, from: [TimelineKeys.home(follower)], batch: 1)
    }
}

/// A follow (`follows`) or unfollow of a `graph` event.
private struct FollowChange {
    let follower: Int64
    let followee: Int64
    let follows: Bool
}
