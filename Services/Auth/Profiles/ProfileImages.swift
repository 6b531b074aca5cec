import AviaryAPI
import Logging
import RPC
import ServiceKit

/// Checks a `profileImageId` with the media service, which alone knows who uploaded what: auth
/// stores only the id and builds `profileImageUrl` from it.
struct ProfileImages: Sendable {
    let resources: ServiceResources

    private struct GetMany: Encodable, Sendable {
        var ids: [EntityID]
        var ownerId: EntityID
        var purpose = "avatar"
    }

    /// Succeeds when `id` is a finished avatar upload of `owner`; anything else (unknown, unfinished,
    /// another user's, uploaded for a tweet or a message) is a `validation` error on `profileImageId`.
    /// An unreachable media service is `unavailable`.
    func check(_ id: EntityID, ownedBy owner: Int64, context: RPCContext) async throws {
        let found: [Media]
        do {
            found = try await resources.client(for: .media).call(
                "media.getMany", params: GetMany(ids: [id], ownerId: EntityID(owner)),
                meta: resources.internalMeta(context), idempotent: true, as: [Media].self)
        } catch let error as RPCError where error.reason == "unavailable" || error.reason == "timeout" {
            throw error
        } catch {
            context.logger.error("media.getMany failed", metadata: ["error": "\(String(reflecting: error))"])
            throw RPCError.unavailable("the media service could not answer; retry shortly")
        }
        guard found.contains(where: { $0.id == id }) else {
            throw RPCError.validation(
                "profileImageId must name a finished upload of yours made with purpose avatar: \(id)", field: "profileImageId")
        }
    }
}
