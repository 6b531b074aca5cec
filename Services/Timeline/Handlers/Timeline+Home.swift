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
        let shownBefore = try await shownAbove(before, inHomeOf: user, context: context)
        return try await page(of: candidates.ids, more: candidates.more, limit: limit, viewer: user, context: context, shownBefore: shownBefore)
    }

    /// How many entries above a page's cursor count as the pages before it: a repost and its
    /// original this far apart or nearer are one entry (Mastodon's feeds look as far back).
    static let repostWindow = 40

    /// The ``repostWindow`` entries of `user`'s home set just newer than `cursor`: what the pages
    /// before showed (or left out), so that a tweet shown there as a repost, or itself, is not
    /// shown again. Empty for the first page, and when the set cannot be read (the page is then
    /// deduplicated on its own).
    private func shownAbove(_ cursor: Int64?, inHomeOf user: Int64, context: RPCContext) async throws -> [Int64] {
        guard let cursor else { return [] }
        do {
            let read = try await cache.read([TimelineKeys.home(user)], before: nil, count: settings.capacity, lifetime: settings.inactiveSeconds)
            return Array(read.slices[0].ids.filter { $0 > cursor }.suffix(Self.repostWindow))
        } catch let error as RedisError where error.isTransient {
            context.logger.debug("the home set above a page cannot be read now", metadata: ["error": "\(error)"])
            return []
        }
    }
}
