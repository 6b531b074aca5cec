import AviaryAPI
import EventStreams
import Logging
import RPC
import ServiceKit

extension SocialGraphService {
    @Sendable func block(_ params: UserParams, _ context: RPCContext) async throws -> BlockState {
        let caller = try context.requireUser()
        let other = try Self.otherUser(params.userId, caller: caller, verb: "block")
        guard try await directory.exists(other, context: context) else { throw Self.unknownUser(params.userId) }
        if try await blocks.block(caller, other) > 0 {
            OutboxRelay.nudge()
            await records.changed([caller, other], by: caller)
            await reads.recordWrite(
                to: [FollowStore.Direction.following, .followers].flatMap { [$0.list(of: caller), $0.list(of: other)] })
        }
        try await blocks.announce([caller, other])
        return BlockState(blocking: true)
    }

    @Sendable func unblock(_ params: UserParams, _ context: RPCContext) async throws -> BlockState {
        let caller = try context.requireUser()
        let other = try Self.otherUser(params.userId, caller: caller, verb: "unblock")
        if try await !blocks.unblock(caller, other), try await !directory.exists(other, context: context) {
            throw Self.unknownUser(params.userId)
        }
        try await blocks.announce([caller, other])
        return BlockState(blocking: false)
    }

    @Sendable func blockList(_ params: PageParams, _ context: RPCContext) async throws -> Page<User> {
        try await ownList(params, context, read: blocks.page)
    }

    /// A page of a list that is the caller's alone (blocks, mutes), as `User`s.
    func ownList(
        _ params: PageParams, _ context: RPCContext, read: (Int64, KeysetCursor?, Int) async throws -> KeysetPage
    ) async throws -> Page<User> {
        let caller = try context.requireUser()
        let page = try await read(caller, try FollowCursor.decode(params.cursor), (params.limit ?? PageLimit()).value)
        let users = try await directory.users(page.ids, viewer: caller, context: context)
        return Page(items: users, nextCursor: page.next?.encoded)
    }

    /// Ends the follows a follow racing a block let through (``BlockStore/recheck()``; a background
    /// job, every ``sweepInterval``).
    static func recheckBlocks(_ blocks: BlockStore, logger: Logger) async {
        do {
            let ended = try await blocks.recheck()
            if ended > 0 {
                OutboxRelay.nudge()
                logger.notice("ended follows that raced a block", metadata: ["graph.follows_ended": "\(ended)"])
            }
        } catch {
            logger.warning("could not look at recent blocks again; trying again", metadata: ["error": "\(error)"])
        }
    }

    @Sendable func blockedWith(_ params: UserParams, _ context: RPCContext) async throws -> [String] {
        try await blocks.blocked(with: params.userId.value).map { String($0) }
    }
}
