import AviaryAPI
import Foundation
import RPC
import ServiceKit

extension MediaService {
    @Sendable func beginUpload(_ params: BeginUploadParams, _ context: RPCContext) async throws -> UploadStarted {
        let owner = try context.requireUser()
        guard params.byteSize > 0 else {
            throw RPCError.validation("byteSize must be at least 1, got \(params.byteSize)", field: "byteSize")
        }
        let limit = settings.maxBytes(of: params.contentType)
        guard params.byteSize <= limit else {
            throw RPCError.tooLarge(
                "byteSize \(params.byteSize) is over the limit for \(params.contentType.rawValue): \(limit) bytes")
        }
        guard params.purpose != .export, params.contentType != .zip else {
            throw RPCError.forbidden("data exports (application/zip) are begun by the accounts service alone")
        }
        if params.purpose == .avatar && params.contentType.isVideo {
            throw RPCError.validation(
                "an avatar must be an image (image/jpeg, image/png, image/gif or image/webp)", field: "contentType")
        }
        switch (params.purpose, params.conversationId) {
        case (.message, nil):
            throw RPCError.validation("conversationId is required for purpose message", field: "conversationId")
        case (.message, let conversation?):
            guard try await membership.isMember(user: owner, of: conversation.value, context: context) else {
                throw RPCError.forbidden("only members of conversation \(conversation) may upload media to it")
            }
        case (_, .some):
            throw RPCError.validation("conversationId is only for purpose message", field: "conversationId")
        case (_, nil):
            break
        }
        return try await begin(
            MediaHead(
                id: ids.next(), ownerID: owner, purpose: params.purpose, conversationID: params.conversationId?.value,
                type: params.contentType, byteSize: params.byteSize),
            sha256: params.sha256)
    }

    /// `media.beginExportUpload`: an upload of a data export for its owner, which they then send and
    /// finish as any upload of theirs.
    @Sendable func beginExportUpload(_ params: BeginExportUploadParams, _ context: RPCContext) async throws -> UploadStarted {
        let limit = settings.maxBytes(of: .zip)
        guard (1...limit).contains(params.byteSize) else {
            throw RPCError.validation("byteSize must be 1 to \(limit), got \(params.byteSize)", field: "byteSize")
        }
        return try await begin(
            MediaHead(id: ids.next(), ownerID: params.ownerId.value, purpose: .export, conversationID: nil, type: .zip, byteSize: params.byteSize),
            sha256: params.sha256)
    }

    private func begin(_ head: MediaHead, sha256: SHA256Hex?) async throws -> UploadStarted {
        let upload = UploadRecord(
            head: head, declaredSHA256: sha256?.value,
            chunkBytes: settings.chunkBytes, received: 0, expiresAt: Date().addingTimeInterval(settings.uploadLifetime.timeInterval))
        if let freed = try await uploads.create(upload, openLimit: settings.openUploadsPerUser) {
            throw RPCError.rateLimited(
                retryAfterMs: max(1, Int64(freed.timeIntervalSinceNow * 1000)),
                "at most \(settings.openUploadsPerUser) uploads may be open at once: finish one, or wait until one expires")
        }
        return UploadStarted(uploadId: EntityID(upload.id), chunkBytes: upload.chunkBytes, expiresAt: upload.expiresAt)
    }

    @Sendable func uploadChunk(_ params: UploadChunkParams, _ context: RPCContext) async throws -> ChunkReceived {
        let offset = params.offset
        let bytes = params.data.data
        guard offset >= 0 else { throw RPCError.validation("offset must not be negative, got \(offset)", field: "offset") }
        guard !bytes.isEmpty else { throw RPCError.validation("data must hold at least one byte", field: "data") }
        let upload = try await ownUpload(params.uploadId, context)
        guard offset < upload.byteSize, offset + Int64(bytes.count) <= upload.byteSize else {
            throw RPCError.validation(
                "the chunk (offset \(offset), \(bytes.count) bytes) goes beyond the declared byteSize \(upload.byteSize)",
                field: "offset")
        }
        guard offset % Int64(upload.chunkBytes) == 0 else {
            throw RPCError.validation("offset must be a multiple of chunkBytes (\(upload.chunkBytes)), got \(offset)", field: "offset")
        }
        let expected = upload.chunkLength(at: offset)
        guard bytes.count == expected else {
            throw RPCError.validation(
                "the chunk at offset \(offset) must hold \(expected) bytes, got \(bytes.count)", field: "data")
        }
        try await storage.writePart(upload: upload.id, offset: offset, bytes: bytes)
        let index = Int(offset / Int64(upload.chunkBytes))
        guard let received = try await uploads.recordChunk(upload: upload.id, index: index, length: bytes.count) else {
            throw RPCError.notFound("upload \(params.uploadId) was finished or has expired")
        }
        return ChunkReceived(received: received)
    }

    /// The caller's unexpired upload `id`.
    func ownUpload(_ id: EntityID, _ context: RPCContext) async throws -> UploadRecord {
        let caller = try context.requireUser()
        guard let upload = try await uploads.find(id.value), upload.expiresAt > Date() else {
            throw RPCError.notFound("no upload in progress has id \(id) (finished, expired, or never begun)")
        }
        guard upload.ownerID == caller else {
            throw RPCError.forbidden("upload \(id) belongs to another user: only its owner may continue or finish it")
        }
        return upload
    }
}

extension Duration {
    /// The duration in seconds, as `TimeInterval`.
    var timeInterval: TimeInterval {
        TimeInterval(components.seconds) + TimeInterval(components.attoseconds) / 1e18
    }
}
