import AviaryJSON
import Logging
import AviaryAPI
import Redis
import RPC
import ServiceKit

extension TimelineService {
    @Sendable func user(_ params: UserPageParams, _ context: RPCContext) async throws -> RawJSON {
        let author = params.userId.value
        let limit = (params.limit ?? PageLimit()).value
        let before = try KeysetCursor.decodeID(params.cursor)
        let count = Self.candidateCount(forPage: limit)
        let viewer = context.principal?.userID
        // Asked while the page is read: a block either way leaves the page empty.
        async let hidden = isHidden(author, from: viewer, context: context)
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
        if try await hidden { return PageJSON.page([], nextCursor: nil) }
        return try await page(of: candidates.ids, more: candidates.more, limit: limit, viewer: viewer, context: context)
    }

    /// Whether `viewer` and `author` blocked one another (never for an anonymous viewer or oneself).
    private func isHidden(_ author: Int64, from viewer: Int64?, context: RPCContext) async throws -> Bool {
        guard let viewer, viewer != author else { return false }
        return try await !graph.resources.blocked(among: [author], with: viewer, context: context).isEmpty
    }

    static func unknownUser(_ id: EntityID) -> RPCError {
        RPCError.notFound("no user has the id \(id)")
    }
}
