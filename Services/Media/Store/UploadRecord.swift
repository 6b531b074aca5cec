import AviaryAPI
import Foundation
import Postgres

/// An upload in progress, as `media.uploads` holds it.
struct UploadRecord: Sendable {
    var id: Int64
    var ownerID: Int64
    var purpose: MediaPurpose
    var conversationID: Int64?
    var type: MediaType
    var byteSize: Int64
    /// The SHA-256 the uploader declared (lower-case hex), checked at the end.
    var declaredSHA256: String?
    var chunkBytes: Int
    var received: Int64
    var expiresAt: Date
    /// The content's SHA-256 once a finish has begun storing the part under it (``UploadStore/markStored(_:sha256:)``).
    var storedSHA256: String? = nil

    /// The length of the chunk at `offset`: `chunkBytes`, or what is left for the last one.
    func chunkLength(at offset: Int64) -> Int {
        Int(min(Int64(chunkBytes), byteSize - offset))
    }

    static let columns = """
        id, owner_id, purpose, conversation_id, content_type, byte_size, declared_sha256, chunk_bytes, received, expires_at,
        stored_sha256
        """
}

extension UploadRecord {
    /// Reads a row selected with ``columns``.
    init(row: PostgresRow) throws {
        id = try row.decode(Int64.self, at: 0)
        ownerID = try row.decode(Int64.self, at: 1)
        purpose = try row.decode(MediaPurpose.self, at: 2)
        conversationID = try row.decode(Int64?.self, at: 3)
        type = try row.decode(MediaType.self, at: 4)
        byteSize = try row.decode(Int64.self, at: 5)
        declaredSHA256 = try row.decode(String?.self, at: 6)
        chunkBytes = try row.decode(Int.self, at: 7)
        received = try row.decode(Int64.self, at: 8)
        expiresAt = try row.decode(Date.self, at: 9)
        storedSHA256 = try row.decode(String?.self, at: 10)
    }
}
