import AviaryJSON
import Logging
import AviaryAPI
import Redis
import RPC

extension TimelineService {
    @Sendable func home(_ params: PageParams, _ context: RPCContext) async throws -> RawJSON {
        let user = try context.requireUser()
        let limit = (params.limit ?? PageLimit()).value
        let before = try KeysetCursor.decodeID(params.cursor)
        let count = Self.candidateCount(forPage: limit)
        let candidates: TimelineIDs
        do {
            candidates = try await homeCandidates(of: user, before: before, count: count, context: context)
        } catch let error as RedisError where error.isTransient {
            context.logger.warning("Redis cannot serve now; reading the home timeline from the services", metadata: ["error": "\(error)"])
            candidates = try await homeCandidatesWithoutRedis(of: user, before: before, count: count, context: context)
        }
        return try await page(of: candidates.ids, more: candidates.more, limit: limit, viewer: user, context: context, shownBefore: candidates.above)
    }

    /// How many entries of the home set from a page's cursor up count as the pages before it: a
    /// repost and its original this far apart or nearer are one entry (Mastodon's feeds look as far
    /// back). They come with the page's own read (``TimelineCache/read(_:before:count:above:lifetime:along:)``).
    static let repostWindow = 40
}
