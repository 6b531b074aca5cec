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

    private struct IDPageParams: Encodable, Sendable {
        var userId: EntityID
        var limit: Int
        var cursor: String?
    }

    private struct IDPage: Decodable, Sendable {
        var items: [String]
        var nextCursor: String?
    }

    /// Calls `body` with each page of `user`'s followers' ids, most recent follow first.
    func forEachFollowerPage(of user: Int64, _ body: ([Int64]) async throws -> Void) async throws {
        var cursor: String?
        repeat {
            let page: IDPage = try await call(
                "graph.followerIds", IDPageParams(userId: EntityID(user), limit: Self.pageSize, cursor: cursor))
            try await body(page.items.compactMap { Int64($0) })
            cursor = page.nextCursor
        } while cursor != nil
    }

    /// Everyone `user` follows; within `context`'s budget and trace when a call asks.
    func following(of user: Int64, context: RPCContext? = nil) async throws -> [Int64] {
        var ids: [Int64] = []
        var cursor: String?
        repeat {
            let page: IDPage = try await call(
                "graph.followingIds", IDPageParams(userId: EntityID(user), limit: Self.pageSize, cursor: cursor),
                context: context)
            ids += page.items.compactMap { Int64($0) }
            cursor = page.nextCursor
        } while cursor != nil
        return ids
    }

    private struct IDs: Encodable, Sendable {
        var ids: [EntityID]
    }

    private struct Stats: Decodable, Sendable {
        var userId: EntityID
        var followers: Int64
    }

    /// The follower counts of `users` (users without follows count zero).
    func followerCounts(of users: [Int64]) async throws -> [Int64: Int64] {
        var counts: [Int64: Int64] = [:]
        for chunk in users.chunks(of: Self.batchSize) {
            let stats: [Stats] = try await call("graph.statsMany", IDs(ids: chunk.map { EntityID($0) }))
            for stat in stats { counts[stat.userId.value] = stat.followers }
        }
        return counts
    }

    private struct RelationshipParams: Encodable, Sendable {
        var viewerId: EntityID
        var ids: [EntityID]
    }

    private struct Relationship: Decodable, Sendable {
        var userId: EntityID
        var isFollowed: Bool
    }

    /// Which of `users` `viewer` follows.
    func followed(by viewer: Int64, among users: [Int64]) async throws -> [Int64] {
        var followed: [Int64] = []
        for chunk in users.chunks(of: Self.batchSize) {
            let relations: [Relationship] = try await call(
                "graph.relationships", RelationshipParams(viewerId: EntityID(viewer), ids: chunk.map { EntityID($0) }))
            followed += relations.filter(\.isFollowed).map(\.userId.value)
        }
        return followed
    }

    private func call<Result: Decodable>(
        _ method: String, _ params: some Encodable & Sendable, context: RPCContext? = nil
    ) async throws -> Result {
        try await resources.callPeer(.socialGraph, method, params: params, context: context)
    }
}
