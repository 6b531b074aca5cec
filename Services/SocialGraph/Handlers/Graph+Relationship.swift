import AviaryAPI
import RPC

extension SocialGraph {
    @Sendable func relationship(_ params: UserParams, _ context: RPCContext) async throws -> Relationship {
        let caller = try context.requireUser()
        let relation = try await store.relationship(of: caller, to: params.userId.value)
        return Relationship(isFollowed: relation.isFollowed, followsYou: relation.followsYou)
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
