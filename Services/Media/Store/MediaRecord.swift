import AviaryAPI
import Postgres

/// A finished medium, as `media.items` holds it. Never changes once written, so it may be cached.
struct MediaRecord: Sendable {
    var id: Int64
    var ownerID: Int64
    var purpose: MediaPurpose
    var conversationID: Int64?
    var type: MediaType
    var byteSize: Int64
    /// Lower-case hex; names the content in storage and is the strong ETag.
    var sha256: String
    var width: Int?
    var height: Int?
    var durationMs: Int64?

    var isPrivate: Bool { purpose == .message }

    static let columns = """
        id, owner_id, purpose, conversation_id, content_type, byte_size, sha256, width, height, duration_ms
        """
}

extension MediaRecord {
    /// Reads a row selected with ``columns``.
    init(row: PostgresRow) throws {
        id = try row.decode(Int64.self, at: 0)
        ownerID = try row.decode(Int64.self, at: 1)
        purpose = try row.decode(MediaPurpose.self, at: 2)
        conversationID = try row.decode(Int64?.self, at: 3)
        type = try row.decode(MediaType.self, at: 4)
        byteSize = try row.decode(Int64.self, at: 5)
        sha256 = try row.decode(String.self, at: 6)
        width = try row.decode(Int?.self, at: 7)
        height = try row.decode(Int?.self, at: 8)
        durationMs = try row.decode(Int64?.self, at: 9)
    }
}

/// Stored as their raw values: a value in the database that no case names fails the row's decoding
/// rather than passing for another kind of medium.
extension MediaPurpose: PostgresDecodable {}
extension MediaType: PostgresDecodable {}
