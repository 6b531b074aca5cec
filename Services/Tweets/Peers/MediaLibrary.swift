import AviaryAPI
import Logging
import RPC
import ServiceKit

/// The media service as tweets needs it, through its internal `media.getMany`: checking the media
/// a new tweet attaches, and the `Media` objects tweets show.
struct MediaLibrary: Sendable {
    let resources: ServiceResources

    /// At most this many media per tweet.
    static let perTweet = 4

    /// The finished media among `ids` by id, restricted to `owner`'s tweet uploads when `owner` is
    /// given: one `media.getMany` call (one per 1,000 media, at once, for a page showing more). An
    /// unreachable media service is `unavailable`.
    func media(_ ids: some Collection<Int64>, ownedBy owner: Int64? = nil, context: RPCContext?) async throws -> [Int64: Media] {
        let resources = resources
        let found = try await inBatches(Array(Set(ids)), of: Media.lookupLimit) { batch in
            try await resources.peers.media.getMany(
                GetMediaParams(ids: batch.map(EntityID.init), ownerId: owner.map(EntityID.init), purpose: owner == nil ? nil : .tweet),
                context: context)
        }
        return Dictionary(found.map { ($0.id.value, $0) }, uniquingKeysWith: { first, _ in first })
    }
}
