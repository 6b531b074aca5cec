import AviaryAPI
import AviaryJSON
import RPC
import ServiceKit

extension SocialGraphService {
    /// The most users `graph.statsMany` and `graph.relationships` take at once.
    static let batchLimit = 1000

    @Sendable func followerIDs(_ params: IDPageParams, _ context: RPCContext) async throws -> RawJSON {
        try await ids(.followers, params)
    }

    @Sendable func followingIDs(_ params: IDPageParams, _ context: RPCContext) async throws -> RawJSON {
        try await ids(.following, params)
    }

    /// A `Page` of id strings, written by hand: fan-out reads pages of thousands of ids, and
    /// `JSONEncoder` took most of such a call. From the primary: fan-out checks its list against
    /// the followers version, which a replica's older list could pass. Without muters' edges:
    /// fan-out and rebuilds then bring a muted user's tweets to no muter's home timeline.
    private func ids(_ direction: FollowStore.Direction, _ params: IDPageParams) async throws -> RawJSON {
        let page = try await store.page(
            direction, of: params.userId.value, after: try FollowCursor.decode(params.cursor),
            limit: (params.limit ?? IDPageLimit()).value, using: store.postgres, unmuted: true)
        var json = PageJSON()
        json.reserve(page.ids.count * 22)
        for id in page.ids { json.append(plain: String(id)) }
        return json.finish(nextCursor: page.next?.encoded)
    }

    /// The counts, and with a viewer the relations too, from the records this process holds or one
    /// statement (``FollowRecords``).
    @Sendable func statsMany(_ params: StatsBatchParams, _ context: RPCContext) async throws -> [UserFollowStats] {
        let users = try params.ids.values(atMost: Self.batchLimit)
        let viewer = params.viewerId?.value
        let summaries = try await records.summaries(of: users, viewer: viewer)
        return params.ids.map { id in
            let found = summaries[id.value] ?? .none
            var stats = UserFollowStats(userId: id, followers: found.totals.followers, following: found.totals.following)
            if viewer != nil {
                stats.isFollowed = found.isFollowed
                stats.followsYou = found.followsYou
            }
            return stats
        }
    }

    @Sendable func relationships(_ params: RelationshipBatchParams, _ context: RPCContext) async throws -> [UserRelationship] {
        let users = try params.ids.values(atMost: Self.batchLimit)
        let relations = try await store.relationships(of: params.viewerId.value, to: users)
        return params.ids.map { id in
            UserRelationship(
                userId: id, isFollowed: relations.followed.contains(id.value), followsYou: relations.followers.contains(id.value))
        }
    }
}
