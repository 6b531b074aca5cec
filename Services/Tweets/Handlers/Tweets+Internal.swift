import AviaryAPI
import AviaryJSON
import RPC

/// The largest batches the internal methods take.
enum Batch {
    static let tweets = 1000
    static let authors = 5000
    static let recent = 800
    static let users = 1000
}

extension TweetsService {
    @Sendable func getMany(_ params: GetTweetsParams, _ context: RPCContext) async throws -> RawJSON {
        let ids = try params.ids.values(atMost: Batch.tweets)
        let shownBefore = try (params.shownBefore ?? []).values(atMost: Batch.tweets, field: "shownBefore")
        return try await hydrator.jsonArray(
            ids, viewer: params.viewerId?.value, omitDeleted: params.omitDeleted ?? false, shownBefore: shownBefore, context: context)
    }

    @Sendable func recentIDs(_ params: RecentIDsParams, _ context: RPCContext) async throws -> RawJSON {
        let authors = try params.authorIds.values(atMost: Batch.authors, field: "authorIds")
        guard (1...Batch.recent).contains(params.limit) else {
            throw RPCError.validation("limit must be from 1 to \(Batch.recent), got \(params.limit)", field: "limit")
        }
        let recent = try await store.recent(of: authors, before: params.before?.value, limit: params.limit)
        // Written by hand: rebuilds ask for hundreds at a time, and these are only digits.
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(2 + recent.count * 52)
        for (index, tweet) in recent.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: #"{"id":""#.utf8)
            bytes.append(contentsOf: String(tweet.id).utf8)
            bytes.append(contentsOf: #"","authorId":""#.utf8)
            bytes.append(contentsOf: String(tweet.author).utf8)
            bytes.append(contentsOf: #""}"#.utf8)
        }
        bytes.append(UInt8(ascii: "]"))
        return RawJSON(unchecked: bytes)
    }

    @Sendable func statsMany(_ params: TweetStatsParams, _ context: RPCContext) async throws -> [UserTweetStats] {
        let users = try params.ids.values(atMost: Batch.users)
        let counts = try await authorCounts.counts(of: users)
        return params.ids.map { UserTweetStats(userId: $0, tweets: counts[$0.value] ?? 0) }
    }
}
