import AviaryAPI
import RPC
import ServiceKit

extension AuthService {
    /// How many of the best matches a search ranks and pages through.
    static let searchCandidates = 500

    func searchUsers(_ params: SearchParams, context: RPCContext) async throws -> Page<User> {
        var query = params.query.trimmingWhitespace()
        if query.hasPrefix("@") { query = String(query.dropFirst()).trimmingWhitespace() }
        query = try TextRules.text(query.lowercased(), field: "query", allowed: 1...50)
        let limit = (params.limit ?? PageLimit()).value
        let after = try KeysetCursor.decode(params.cursor)
        let viewer = context.principal?.userID

        // The ranking key puts followed accounts above every other match, then orders by score;
        // pages continue strictly after the last (key, id) seen.
        let candidates = try await users.search(
            query, limit: Self.searchCandidates, using: await resources.replicaReads.client(reading: viewer.map(Self.profile)))
        let relations = await profiles.relationsByUser(candidates.map { EntityID($0.user.id) }, viewer: viewer, context: context)
        var ranked: [RankedUser] = candidates.map { candidate in
            let followed: Int64 = relations[candidate.user.id]?.isFollowed == true ? 1 << 40 : 0
            return RankedUser(key: followed + Int64((candidate.score * 1_000_000).rounded()), user: candidate.user)
        }
        ranked.sort()
        if let after {
            ranked.removeAll { $0.key > after.key || ($0.key == after.key && $0.user.id <= after.id) }
        }
        let page = Array(ranked.prefix(limit))
        let next = ranked.count > limit ? page.last.map { KeysetCursor(key: $0.key, id: $0.user.id).encoded } : nil
        let items = await profiles.users(page.map { $0.user }, viewer: viewer, context: context)
        return Page(items: items, nextCursor: next)
    }
}

/// A search match with its ranking key; sorts best first, ties by id.
private struct RankedUser: Comparable {
    var key: Int64
    var user: UserRecord

    static func < (lhs: RankedUser, rhs: RankedUser) -> Bool {
        lhs.key != rhs.key ? lhs.key > rhs.key : lhs.user.id < rhs.user.id
    }

    static func == (lhs: RankedUser, rhs: RankedUser) -> Bool {
        lhs.key == rhs.key && lhs.user.id == rhs.user.id
    }
}
