import AviaryAPI
import EventStreams
import RPC
import ServiceKit

extension SocialGraphService {
    @Sendable func follow(_ params: UserParams, _ context: RPCContext) async throws -> FollowState {
        let caller = try context.requireUser()
        let followee = try Self.otherUser(params.userId, caller: caller, verb: "follow")
        guard try await directory.exists(followee, context: context) else { throw Self.unknownUser(params.userId) }
        if try await store.follow(follower: caller, followee: followee) {
            // The event reaches its stream, and other processes hear of the change, at once rather
            // than at the relay's next poll.
            OutboxRelay.nudge()
            await records.changed([caller, followee], by: caller)
            await reads.recordWrite(to: [FollowStore.Direction.following.list(of: caller), FollowStore.Direction.followers.list(of: followee)])
        } else if try await blocks.isBlocked(caller, followee) {
            throw RPCError.forbidden("you cannot follow this user: one of you blocked the other")
        }
        return FollowState(following: true)
    }

    @Sendable func unfollow(_ params: UserParams, _ context: RPCContext) async throws -> FollowState {
        let caller = try context.requireUser()
        let followee = try Self.otherUser(params.userId, caller: caller, verb: "unfollow")
        // An edge that existed proves the user; only a no-op needs the accounts service to tell
        // "not followed" from "no such user".
        if try await store.unfollow(follower: caller, followee: followee) {
            OutboxRelay.nudge()
            await records.changed([caller, followee], by: caller)
            await reads.recordWrite(to: [FollowStore.Direction.following.list(of: caller), FollowStore.Direction.followers.list(of: followee)])
            return FollowState(following: false)
        }
        guard try await directory.exists(followee, context: context) else { throw Self.unknownUser(params.userId) }
        return FollowState(following: false)
    }

    static func otherUser(_ id: EntityID, caller: Int64, verb: String) throws(RPCError) -> Int64 {
        guard id.value != caller else {
            throw RPCError.validation("userId must be another user: you cannot \(verb) yourself", field: "userId")
        }
        return id.value
    }

    static func unknownUser(_ id: EntityID) -> RPCError {
        RPCError.notFound("no user has the id \(id)")
    }
}
