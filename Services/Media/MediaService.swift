import AviaryAPI
import Foundation
import Logging
import RPC
import ServiceKit

/// The media service: chunked uploads over JSON-RPC, verified and stored by content hash, served
/// over HTTP (`GET /media/<id>` on the admin port) and described to the other services.
struct MediaService: Sendable {
    let settings: MediaSettings
    let uploads: UploadStore
    let items: MediaStore
    let catalog: MediaCatalog
    let storage: any MediaStorage
    let signer: URLSigner
    let membership: Membership
    let ids: SnowflakeGenerator

    /// `ServiceDefinition.register`: builds the service, registers its methods, its HTTP route and its sweeper.
    static func register(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        let settings = try MediaSettings(configuration: resources.configuration)
        let storage = try await LocalMediaStorage(root: settings.root)
        let items = MediaStore(postgres: resources.postgres)
        let media = MediaService(
            settings: settings, uploads: UploadStore(postgres: resources.postgres), items: items,
            catalog: MediaCatalog(store: items), storage: storage,
            signer: URLSigner(serviceCredentials: resources.acceptedServiceCredentials, lifetime: settings.signedURLLifetime),
            membership: Membership(resources: resources), ids: resources.ids)
        media.registerMethods(with: &router)
        resources.addAdminRoute(MediaHTTPRoute(media: media).route)
        let sweeper = UploadSweeper(uploads: media.uploads, storage: storage, settings: settings, logger: resources.logger)
        resources.addBackgroundService(PeriodicJob(every: settings.sweepInterval, sweeper.sweep))
        resources.logger.info("media storage", metadata: ["media.root": "\(settings.root)"])
    }

    func registerMethods(with router: inout RPCRouter) {
        router.register(
            "media.beginUpload",
            summary: """
                Start an upload of byteSize bytes of contentType (image/jpeg, image/png, image/gif, image/webp: up to 16 MiB; \
                video/mp4, video/quicktime: up to 100 MiB; over the limit is too_large). purpose avatar (images only), tweet, \
                or message (with the conversationId the caller belongs to). sha256 (hex), when given, is checked at the end. \
                Returns uploadId and chunkBytes: send the file with media.uploadChunk in chunks of chunkBytes (the last one \
                shorter) before expiresAt (24 h), then call media.finishUpload.
                """,
            access: .user, handler: beginUpload)
        router.register(
            "media.uploadChunk",
            summary: """
                Send the chunk of an upload at offset (a multiple of chunkBytes), data as base64. Chunks may come in any \
                order and may be sent again (a repeated chunk counts once). Returns received: the bytes received so far. \
                A chunk of the wrong length, past the declared size, or not base64 is a validation error and nothing is written. \
                Only the user who began the upload may send chunks.
                """,
            access: .user, handler: uploadChunk)
        router.register(
            "media.finishUpload",
            summary: """
                Finish an upload once every chunk arrived: checks the size, the sha256 if declared, and the content against \
                the declared type (magic bytes), reads width and height (images, video) and durationMs (video), stores it and \
                returns the Media. A failed check is a validation error naming the field and discards the upload. Calling it \
                again returns the same Media. Only the user who began the upload may finish it.
                """,
            access: .user, handler: finishUpload)
        router.register(
            "media.get",
            summary: """
                A finished Media by mediaId. Message media is visible only to members of its conversation (with a token), and \
                its url is signed and expires; others get not_found.
                """,
            access: .anonymous, handler: get)
        router.register(
            "media.read",
            summary: """
                Up to length bytes (at most 512 KiB) of a finished medium from offset, as base64 in data (empty at the end). \
                Message media needs a token of a member of its conversation.
                """,
            access: .anonymous, handler: read)
        router.register(MediaAPI.getMany, handler: getMany)
    }

    /// The client's view of `record`; a private medium's URL carries a fresh signature.
    func media(_ record: MediaRecord) -> Media {
        var url = "\(settings.publicURL)/media/\(record.id)"
        if record.isPrivate { url += "?" + signer.query(for: record.id) }
        return Media(
            id: EntityID(record.id), url: url, contentType: record.type.rawValue, byteSize: record.byteSize,
            width: record.width, height: record.height, durationMs: record.durationMs)
    }
}
