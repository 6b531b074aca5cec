import AviaryAPI
import AviaryJSON
import RPC
import ServiceKit

/// The tweets service as timelines need it, through its internal methods.
struct TweetsPeer: Sendable {
    let resources: ServiceResources
    /// The most authors `tweets.recentIds` takes per call.
    static let authorsPerCall = 5000
    /// The most ids `tweets.recentIds` returns per call.
    static let maximumRecent = 800

    /// The hydrated tweets of `ids` as `viewer` sees them, as the encoded array `tweets.getMany`
    /// answered (in the order asked, deleted and unknown ones left out).
    /// With `shownBefore`, the entries of the pages before (`tweets.getMany` shows none of their
    /// tweets again).
    func tweets(_ ids: [Int64], viewer: Int64?, shownBefore: [Int64] = [], context: RPCContext?) async throws -> [UInt8] {
        try await resources.peers.tweets.getMany.encoded(
            encodedParams: Self.getManyParams(ids, viewer: viewer, shownBefore: shownBefore), context: context
        ).bytes
    }

    /// `{"ids":["1",…],"viewerId":"2","shownBefore":[…],"omitDeleted":true}`, written by hand: every
    /// home read sends one, and encoding it through `JSONEncoder` cost more than the rest of the
    /// call's set-up.
    static func getManyParams(_ ids: [Int64], viewer: Int64?, shownBefore: [Int64] = []) -> RawJSON {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + (ids.count + shownBefore.count) * 22)
        func list(_ name: String, _ ids: [Int64]) {
            bytes.append(contentsOf: #""\#(name)":["#.utf8)
            for (index, id) in ids.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes.append(UInt8(ascii: "\""))
                bytes.append(contentsOf: String(id).utf8)
                bytes.append(UInt8(ascii: "\""))
            }
            bytes.append(UInt8(ascii: "]"))
        }
        bytes.append(UInt8(ascii: "{"))
        list("ids", ids)
        if !shownBefore.isEmpty {
            bytes.append(UInt8(ascii: ","))
            list("shownBefore", shownBefore)
        }
        if let viewer {
            bytes.append(contentsOf: #","viewerId":""#.utf8)
            bytes.append(contentsOf: String(viewer).utf8)
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(contentsOf: #","omitDeleted":true}"#.utf8)
        return RawJSON(unchecked: bytes)
    }

    /// The ids of the newest live tweets (replies included) of `authors`, newest first, at most
    /// `limit` (≤ 800), strictly older than `before` when given.
    func recentIDs(of authors: [Int64], limit: Int, before: Int64? = nil, context: RPCContext? = nil) async throws -> [Int64] {
        guard !authors.isEmpty else { return [] }
        let limit = min(limit, Self.maximumRecent)
        let resources = resources
        var merged = try await inBatches(authors, of: Self.authorsPerCall) { batch in
            let found = try await resources.peers.tweets.recentIds(
                RecentIDsParams(authorIds: batch.map { EntityID($0) }, limit: limit, before: before.map { EntityID($0) }),
                context: context)
            return found.map(\.id.value)
        }
        if authors.count > Self.authorsPerCall {
            merged.sort(by: >)
            merged = Array(merged.prefix(limit))
        }
        return merged
    }
}
