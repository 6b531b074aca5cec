import AviaryAPI
import RPC
import ServiceKit

/// The tweets service as timelines need it, through its internal methods.
struct TweetsPeer: Sendable {
    let resources: ServiceResources
    /// The most authors `tweets.recentIds` takes per call.
    static let authorsPerCall = 5000
    /// The most ids `tweets.recentIds` returns per call.
    static let maximumRecent = 800

    private struct GetMany: Encodable, Sendable {
        var ids: [EntityID]
        var viewerId: EntityID?
        var omitDeleted: Bool
    }

    /// The hydrated tweets of `ids` as `viewer` sees them, as the encoded array `tweets.getMany`
    /// answered (in the order asked, deleted and unknown ones left out).
    func tweets(_ ids: [Int64], viewer: Int64?, context: RPCContext?) async throws -> [UInt8] {
        let params = try RawJSON(
            encoding: GetMany(ids: ids.map { EntityID($0) }, viewerId: viewer.map { EntityID($0) }, omitDeleted: true))
        let response = try await resources.client(for: .tweets).send(
            "tweets.getMany", params: params, meta: resources.internalMeta(context), idempotent: true)
        return try JSONSplice.result(of: response)
    }

    private struct RecentParams: Encodable, Sendable {
        var authorIds: [EntityID]
        var limit: Int
        var before: EntityID?
    }

    private struct Recent: Decodable, Sendable {
        var id: EntityID
    }

    /// The ids of the newest live tweets (replies included) of `authors`, newest first, at most
    /// `limit` (≤ 800), strictly older than `before` when given.
    func recentIDs(of authors: [Int64], limit: Int, before: Int64? = nil, context: RPCContext? = nil) async throws -> [Int64] {
        guard !authors.isEmpty else { return [] }
        let limit = min(limit, Self.maximumRecent)
        var merged: [Int64] = []
        for chunk in authors.chunks(of: Self.authorsPerCall) {
            let found: [Recent] = try await resources.client(for: .tweets).call(
                "tweets.recentIds",
                params: RecentParams(authorIds: chunk.map { EntityID($0) }, limit: limit, before: before.map { EntityID($0) }),
                meta: resources.internalMeta(context), idempotent: true, as: [Recent].self)
            merged += found.map(\.id.value)
        }
        if authors.count > Self.authorsPerCall {
            merged.sort(by: >)
            merged = Array(merged.prefix(limit))
        }
        return merged
    }
}
