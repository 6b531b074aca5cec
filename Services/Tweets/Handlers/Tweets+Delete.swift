import AviaryAPI
import EventStreams
import Logging
import RPC

extension TweetsService {
    @Sendable func delete(_ params: TweetParams, _ context: RPCContext) async throws -> DeleteResult {
        let caller = try context.requireUser()
        switch try await store.delete(params.tweetId.value, by: caller) {
        case .notFound:
            throw Self.unknownTweet(params.tweetId)
        case .notAuthor:
            throw RPCError.forbidden("only its author can delete a tweet")
        case .alreadyDeleted:
            return DeleteResult(deleted: true)
        case .deleted(let parent, let original):
            OutboxRelay.nudge()
            await states.changed([params.tweetId.value] + [parent, original].compactMap { $0 }, by: caller)
            authorCounts.changedHere([caller])
            await recordWrite(by: caller, parent: parent)
            do {
                try await cache.forget([params.tweetId.value])
            } catch {
                // Reads take deletion from the states, never from the body: a stale body is not shown.
                context.logger.warning("tombstoning a deleted tweet's cached body failed", metadata: ["error": "\(error)"])
            }
            return DeleteResult(deleted: true)
        }
    }
}
