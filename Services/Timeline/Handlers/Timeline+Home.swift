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
        return try await page(of: candidates.ids, more: candidates.more, limit: limit, viewer: user, context: context)
    }
}
