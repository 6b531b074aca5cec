import AviaryAPI
import Foundation
import Postgres

/// An upload in progress, as `media.uploads` holds it. Its ``MediaHead``'s fields read as its own
/// (`upload.byteSize`).
@dynamicMemberLookup
struct UploadRecord: Sendable {
    var head: MediaHead
    /// The SHA-256 the uploader declared (lower-case hex), checked at the end.
    var declaredSHA256: String?
    var chunkBytes: Int
    var received: Int64
    var expiresAt: Date
    /// The content's SHA-256 once a finish has begun storing the part under it (``UploadStore/markStored(_:sha256:)``).
    var storedSHA256: String? = nil

    subscript<Value>(dynamicMember field: KeyPath<MediaHead, Value>) -> Value { head[keyPath: field] }

    /// The length of the chunk at `offset`: `chunkBytes`, or what is left for the last one.
    func chunkLength(at offset: Int64) -> Int {
        Int(min(Int64(chunkBytes), head.byteSize - offset))
    }

    static let columns = MediaHead.columns + ", declared_sha256, chunk_bytes, received, expires_at, stored_sha256"
}

extension UploadRecord {
    /// Reads a row selected with ``columns``.
    init(row: PostgresRow) throws {
        head = try MediaHead(row: row)
        let first = MediaHead.columnCount
        declaredSHA256 = try row.decode(String?.self, at: first)
        chunkBytes = try row.decode(Int.self, at: first + 1)
        received = try row.decode(Int64.self, at: first + 2)
        expiresAt = try row.decode(Date.self, at: first + 3)
        storedSHA256 = try row.decode(String?.self, at: first + 4)
    }
}
