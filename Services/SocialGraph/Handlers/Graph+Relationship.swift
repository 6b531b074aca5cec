import AviaryAPI
import RPC

extension SocialGraphService {
    @Sendable func relationship(_ params: UserParams, _ context: RPCContext) async throws -> Relationship {
        let caller = try context.requireUser()
        let other = params.userId.value
        let relation = try await store.relationship(of: caller, to: other)
        // An edge (a follow, block or mute) either way proves the user exists; without one, ask (no such user is not_found,
        // as for graph.stats and graph.follow, rather than a relationship with nobody). Oneself
        // neither follows nor is followed.
        let edge = relation.isFollowed || relation.followsYou || relation.blocking || relation.blockedBy || relation.muting
        if !edge, other != caller, try await !directory.exists(other, context: context) {
            throw Self.unknownUser(params.userId)
        }
        return relation
    }

    @Sendable func stats(_ params: UserParams, _ context: RPCContext) async throws -> FollowStats {
        let user = params.userId.value
        guard let totals = try await store.totals(of: [user])[user] else {
            // No totals: no follows yet, or no such user.
            guard try await directory.exists(user, context: context) else { throw Self.unknownUser(params.userId) }
            return FollowStats(followers: 0, following: 0)
        }
        return FollowStats(followers: totals.followers, following: totals.following)
    }
}
