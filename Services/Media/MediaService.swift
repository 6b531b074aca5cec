import AviaryAPI
import EventStreams
import Foundation
import Logging
import Redis
import RPC
import ServiceKit

/// The media service: chunked uploads over JSON-RPC, verified and stored by content hash, served
/// over HTTP (`GET /media/<id>` on the admin port) and described to the other services.
public struct MediaService: Sendable {
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
        let catalog = MediaCatalog(store: items, redis: resources.redis, logger: resources.logger)
        resources.addBackgroundService(LocalCopyWatch(redis: resources.redis, watches: [catalog.copy.watch(on:)], logger: resources.logger))
        let media = MediaService(
            settings: settings, uploads: UploadStore(postgres: resources.postgres), items: items,
            catalog: catalog, storage: storage,
            signer: URLSigner(serviceCredentials: resources.acceptedServiceCredentials, lifetime: settings.signedURLLifetime),
            membership: Membership(resources: resources), ids: resources.ids)
        media.registerMethods(with: &router)
        resources.addAdminRoutes(MediaHTTPRoute(media: media).add(to:))
        let sweeper = UploadSweeper(uploads: media.uploads, storage: storage, settings: settings, logger: resources.logger)
        resources.addBackgroundService(PeriodicJob(every: settings.sweepInterval, sweeper.sweep))
        let contents = ContentSweeper(items: items, storage: storage, age: settings.orphanSweepInterval, logger: resources.logger)
        resources.addBackgroundService(PeriodicJob(every: settings.orphanSweepInterval, contents.sweep))
        resources.eraseDeletedAccounts(media.erase(owner:))
        resources.logger.info("media storage", metadata: ["media.root": "\(settings.root)"])
    }

    func registerMethods(with router: inout RPCRouter) {
        router.register(MediaAPI.beginUpload, handler: beginUpload)
        router.register(MediaAPI.beginExportUpload, handler: beginExportUpload)
        router.register(MediaAPI.describe, handler: describe)
        router.register(MediaAPI.discard, handler: discard)
        router.register(MediaAPI.uploadChunk, handler: uploadChunk)
        router.register(MediaAPI.finishUpload, handler: finishUpload)
        router.register(MediaAPI.get, handler: get)
        router.register(MediaAPI.read, handler: read)
        router.register(MediaAPI.getMany, handler: getMany)
    }

    /// Erases `owner`'s media once their account is deleted: the rows, the files no other medium
    /// holds, the parts of unfinished uploads; every process forgets the media. Idempotent.
    func erase(owner: Int64) async throws {
        try await clear(try await items.erase(owner: owner))
    }

    /// After media are deleted: every process forgets them, and the files nothing holds go.
    func clear(_ deletion: MediaStore.Deletion) async throws {
        try await catalog.forget(deletion.media)
        for sha256 in deletion.unheld { try await storage.removeObject(sha256: sha256) }
        for upload in deletion.uploads { try await storage.removePart(upload: upload) }
    }

    /// The client's view of `record`; a private medium's URL carries a fresh signature.
    func media(_ record: MediaRecord) -> Media {
        var url = "\(settings.publicURL)/media/\(record.id)"
        if record.isPrivate { url += "?" + signer.query(for: record.id) }
        return Media(
            id: EntityID(record.id), url: url, contentType: record.type.rawValue, byteSize: record.byteSize,
            width: record.width, height: record.height, durationMs: record.durationMs, description: record.description,
            focus: record.focus)
    }
}
