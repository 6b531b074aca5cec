import AviaryJSON
import Logging
import AviaryAPI
import Redis
import RPC

extension TimelineService {
    @Sendable func user(_ params: UserPageParams, _ context: RPCContext) async throws -> RawJSON {
        let author = params.userId.value
        let limit = (params.limit ?? PageLimit()).value
        let before = try KeysetCursor.decodeID(params.cursor)
        let count = Self.candidateCount(forPage: limit)
        let candidates: TimelineIDs
        do {
            guard let found = try await recent(of: author, before: before, count: count) else {
                throw Self.unknownUser(params.userId)
            }
            candidates = found
        } catch let error as RedisError where error.isTransient {
            context.logger.warning("Redis cannot serve now; reading the user timeline from the tweets service", metadata: ["error": "\(error)"])
            let ids = try await tweets.recentIDs(of: [author], limit: count, before: before, context: context)
            if ids.isEmpty, try await !accounts.exists(author, context: context) { throw Self.unknownUser(params.userId) }
            candidates = TimelineIDs(ids: ids, more: ids.count == count)
        }
        return try await page(
            of: candidates.ids, more: candidates.more, limit: limit, viewer: context.principal?.userID, context: context)
    }

    static func unknownUser(_ id: EntityID) -> RPCError {
        RPCError.notFound("no user has the id \(id)")
    }
}
