import AviaryAPI
import EventStreams
import RPC
import ServiceKit

extension TweetsService {
    @Sendable func repost(_ params: TweetParams, _ context: RPCContext) async throws -> RepostState {
        let caller = try context.requireUser()
        let original = try await shareable(params.tweetId, by: caller, "repost this tweet", context: context)
        guard let outcome = try await store.repost(original, by: caller, id: resources.ids.next()) else {
            throw Self.unknownTweet(params.tweetId)
        }
        if outcome.changed { await repostChanged(outcome, by: caller) }
        return RepostState(reposts: outcome.reposts, repostedByMe: true, repostId: outcome.repost.map(EntityID.init))
    }

    @Sendable func unrepost(_ params: TweetParams, _ context: RPCContext) async throws -> RepostState {
        let caller = try context.requireUser()
        guard let outcome = try await store.unrepost(params.tweetId.value, by: caller) else { throw Self.unknownTweet(params.tweetId) }
        if outcome.changed { await repostChanged(outcome, by: caller) }
        return RepostState(reposts: outcome.reposts, repostedByMe: false, repostId: nil)
    }

    @Sendable func reposters(_ params: RepliesParams, _ context: RPCContext) async throws -> Page<UserSummary> {
        let before = try KeysetCursor.decodeID(params.cursor)
        let page = try await store.reposters(of: params.tweetId.value, before: before, limit: (params.limit ?? PageLimit()).value)
        if page.ids.isEmpty, before == nil, try await store.tweets([params.tweetId.value], viewer: nil).values.allSatisfy(\.deleted) {
            throw Self.unknownTweet(params.tweetId)
        }
        let reposterIDs = page.ids.compactMap { page.authors[$0] }
        let users = try await accounts.summaries(reposterIDs, context: context)
        return Page(items: reposterIDs.compactMap { users[$0] }, nextCursor: page.next?.encoded)
    }

    /// The live tweet that reposting or quoting `tweet` as `caller` means (its original when it is
    /// a repost): `not_found` when there is none or its author is suspended, `forbidden` when its
    /// author and the caller blocked one another.
    func shareable(_ tweet: EntityID, by caller: Int64, _ action: String, context: RPCContext) async throws -> Int64 {
        guard let original = try await store.original(of: tweet.value), !suspended.contains(original.author) else {
            throw Self.unknownTweet(tweet)
        }
        try await resources.refuseIfBlocked(caller, original.author, action, context: context)
        return original.id
    }

    /// After a repost or its undoing commits: the event goes out at once, and this process forgets
    /// the original's state and the reposter's count.
    private func repostChanged(_ outcome: TweetStore.RepostOutcome, by caller: Int64) async {
        OutboxRelay.nudge()
        await states.changed([outcome.original], by: caller)
        authorCounts.changedHere([caller])
        await recordWrite(by: caller, parent: nil)
    }
}
