import AviaryAPI
import Foundation

/// Result of `media.beginUpload`: send the file in chunks of `chunkBytes` (the last one shorter),
/// each at an offset that is a multiple of it, before `expiresAt`.
struct UploadStarted: Encodable, Sendable {
    var uploadId: EntityID
    var chunkBytes: Int
    var expiresAt: Date
}

/// Result of `media.uploadChunk`: the bytes received so far (each chunk counted once).
struct ChunkReceived: Encodable, Sendable {
    var received: Int64
}

/// Result of `media.read`: the bytes as base64.
struct ReadResult: Encodable, Sendable {
    var data: String
}
