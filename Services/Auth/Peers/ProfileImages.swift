import AviaryAPI
import Logging
import RPC
import ServiceKit

/// Checks a `profileImageId` with the media service, which alone knows who uploaded what: auth
/// stores only the id and builds `profileImageUrl` from it.
struct ProfileImages: Sendable {
    let resources: ServiceResources

    /// Succeeds when `id` is a finished avatar upload of `owner`; anything else (unknown, unfinished,
    /// another user's, uploaded for a tweet or a message) is a `validation` error on `profileImageId`.
    /// An unreachable media service is `unavailable`.
    func check(_ id: EntityID, ownedBy owner: Int64, context: RPCContext) async throws {
        let found = try await resources.peers.media.getMany(
            GetMediaParams(ids: [id], ownerId: EntityID(owner), purpose: .avatar), context: context)
        guard found.contains(where: { $0.id == id }) else {
            throw RPCError.validation(
                "profileImageId must name a finished upload of yours made with purpose avatar: \(id)", field: "profileImageId")
        }
    }
}
