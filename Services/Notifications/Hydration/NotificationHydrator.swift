import AviaryAPI
import AviaryJSON
import Logging
import RPC
import ServiceKit

/// Makes stored notifications into what clients see: actors from ONE `auth.getUsers` call and
/// tweets from ONE `tweets.getMany` call per batch, whatever its size.
struct NotificationHydrator: Sendable {
    let resources: ServiceResources

    /// The items of `groups`, in order. With `grouped`, items carry `count` and `actors`. An item
    /// whose newest actor the accounts service does not know (a deleted account) is left out.
    func items(
        _ groups: [NotificationGrouping.Group], grouped: Bool, viewer: Int64?, context: RPCContext?
    ) async throws -> [NotificationItem] {
        let shownActors = groups.map { Self.actors(of: $0, grouped: grouped) }
        let actorIDs = Array(Set(shownActors.joined()))
        let tweetIDs = Array(Set(groups.compactMap(\.newest.tweet)))
        async let users = users(actorIDs, context: context)
        async let tweets = tweets(tweetIDs, viewer: viewer, context: context)
        let (usersByID, tweetsByID) = try await (users, tweets)
        var items: [NotificationItem] = []
        items.reserveCapacity(groups.count)
        for (group, actorIDs) in zip(groups, shownActors) {
            let newest = group.newest
            guard let actor = usersByID[newest.actor] else { continue }
            items.append(NotificationItem(
                id: EntityID(newest.id), type: newest.kind, actor: actor, tweet: newest.tweet.flatMap { tweetsByID[$0] },
                conversationId: newest.conversation.map { EntityID($0) }, createdAt: newest.createdAt,
                read: group.read, count: grouped ? group.count : nil,
                actors: grouped ? actorIDs.compactMap { usersByID[$0] } : nil))
        }
        return items
    }

    /// The items of notifications shown one by one.
    func items(_ rows: [NotificationRow], viewer: Int64?, context: RPCContext?) async throws -> [NotificationItem] {
        try await items(rows.map(NotificationGrouping.Group.init), grouped: false, viewer: viewer, context: context)
    }

    /// The actors an item shows: the newest, or in a grouped list up to three distinct, newest first.
    private static func actors(of group: NotificationGrouping.Group, grouped: Bool) -> [Int64] {
        guard grouped else { return [group.newest.actor] }
        var seen: [Int64] = []
        for actor in group.actors where !seen.contains(actor) {
            seen.append(actor)
            if seen.count == 3 { break }
        }
        return seen
    }

    private func users(_ ids: [Int64], context: RPCContext?) async throws -> [Int64: UserSummary] {
        guard !ids.isEmpty else { return [:] }
        let users = try await resources.peers.auth.getUsers(
            GetUsersParams(ids: ids.map { EntityID($0) }), context: context)
        return Dictionary(users.map { ($0.id.value, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Tweets as the tweets service encoded them, by id (unknown ones left out): split out of its
    /// answer, not decoded.
    private func tweets(_ ids: [Int64], viewer: Int64?, context: RPCContext?) async throws -> [Int64: RawJSON] {
        guard !ids.isEmpty else { return [:] }
        let array = try await resources.peers.tweets.getMany.encoded(
            GetTweetsParams(ids: ids.map { EntityID($0) }, viewerId: viewer.map { EntityID($0) }),
            context: context
        ).bytes
        let elements = try JSONSplice.elements(
            ofAnswer: array, to: TweetsAPI.getMany.name, logger: context?.logger ?? resources.logger)
        var byID: [Int64: RawJSON] = [:]
        for range in elements {
            let tweet = array[range]
            if let id = JSONSplice.stringMember("id", of: tweet).flatMap({ Int64($0) }) {
                byID[id] = RawJSON(unchecked: Array(tweet))
            }
        }
        return byID
    }
}
