import AviaryAPI
import AviaryJSON
import RPC

extension TweetsService {
    @Sendable func get(_ params: TweetParams, _ context: RPCContext) async throws -> RawJSON {
        guard let tweet = try await hydrator.json(params.tweetId.value, viewer: context.principal?.userID, context: context)
        else { throw Self.unknownTweet(params.tweetId) }
        return tweet
    }

    static func unknownTweet(_ id: EntityID) -> RPCError {
        RPCError.notFound("no tweet has the id \(id)")
    }
}
