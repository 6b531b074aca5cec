import AviaryAPI
import EventStreams
import RPC
import ServiceKit

extension TweetsService {
    @Sendable func like(_ params: TweetParams, _ context: RPCContext) async throws -> LikeState {
        let caller = try context.requireUser()
        guard let author = try await store.authors(of: [params.tweetId.value])[params.tweetId.value] else {
            throw Self.unknownTweet(params.tweetId)
        }
        try await resources.refuseIfBlocked(caller, author, "like this tweet", context: context)
        guard let count = try await likes.like(params.tweetId.value, by: caller) else { throw Self.unknownTweet(params.tweetId) }
        OutboxRelay.nudge()
        await states.changed([params.tweetId.value], by: caller)
        return LikeState(likes: count, likedByMe: true)
    }

    @Sendable func unlike(_ params: TweetParams, _ context: RPCContext) async throws -> LikeState {
        let caller = try context.requireUser()
        guard let count = try await likes.unlike(params.tweetId.value, by: caller) else { throw Self.unknownTweet(params.tweetId) }
        OutboxRelay.nudge()
        await states.changed([params.tweetId.value], by: caller)
        return LikeState(likes: count, likedByMe: false)
    }
}
