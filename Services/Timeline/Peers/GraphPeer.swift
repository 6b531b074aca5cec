import AviaryAPI
import RPC
import ServiceKit

/// The social-graph service as timelines need it, through its internal methods.
struct GraphPeer: Sendable {
    let resources: ServiceResources
    /// The most ids `graph.followerIds` and `graph.followingIds` give per page.
    static let pageSize = 5000
    /// The most ids `graph.statsMany` and `graph.relationships` take per call.
    static let batchSize = 1000

    /// Calls `body` with each page of `user`'s followers' ids, most recent follow first.
    func forEachFollowerPage(of user: Int64, _ body: ([Int64]) async throws -> Void) async throws {
        var cursor: String?
        repeat {
            let page = try await resources.peers.graph.followerIds(
                IDPageParams(userId: EntityID(user), limit: IDPageLimit(Self.pageSize), cursor: cursor),
                context: nil)
            try await body(page.items.compactMap { Int64($0) })
            cursor = page.nextCursor
        } while cursor != nil
    }

    /// Everyone `user` follows; within `context`'s budget and trace when a call asks.
    func following(of user: Int64, context: RPCContext? = nil) async throws -> [Int64] {
        var ids: [Int64] = []
        var cursor: String?
        repeat {
            let page = try await resources.peers.graph.followingIds(
                IDPageParams(userId: EntityID(user), limit: IDPageLimit(Self.pageSize), cursor: cursor),
                context: context)
            ids += page.items.compactMap { Int64($0) }
            cursor = page.nextCursor
        } while cursor != nil
        return ids
    }

    /// The follower counts of `users` (users without follows count zero).
    func followerCounts(of users: [Int64]) async throws -> [Int64: Int64] {
        var counts: [Int64: Int64] = [:]
        for chunk in users.chunks(of: Self.batchSize) {
            let stats = try await resources.peers.graph.statsMany(
                StatsBatchParams(ids: chunk.map { EntityID($0) }), context: nil)
            for stat in stats { counts[stat.userId.value] = stat.followers }
        }
        return counts
    }

    /// Which of `users` `viewer` follows.
    func followed(by viewer: Int64, among users: [Int64]) async throws -> [Int64] {
        var followed: [Int64] = []
        for chunk in users.chunks(of: Self.batchSize) {
            let relations = try await resources.peers.graph.relationships(
                RelationshipBatchParams(viewerId: EntityID(viewer), ids: chunk.map { EntityID($0) }),
                context: nil)
            followed += relations.filter(\.isFollowed).map(\.userId.value)
        }
        return followed
    }
}
