import AviaryAPI
import Postgres

/// What a medium is and whose: the first columns of both `media.uploads` and `media.items`, which
/// an upload hands on to the medium it becomes.
struct MediaHead: Sendable {
    var id: Int64
    var ownerID: Int64
    var purpose: MediaPurpose
    var conversationID: Int64?
    var type: MediaType
    var byteSize: Int64

    var isPrivate: Bool { purpose == .message || purpose == .export }

    static let columns = "id, owner_id, purpose, conversation_id, content_type, byte_size"
    /// How many columns ``columns`` names: a record's own columns follow.
    static let columnCount = 6

    /// Reads the first ``columnCount`` columns of a row selected with ``columns`` first.
    init(row: PostgresRow) throws {
        id = try row.decode(Int64.self, at: 0)
        ownerID = try row.decode(Int64.self, at: 1)
        purpose = try row.decode(MediaPurpose.self, at: 2)
        conversationID = try row.decode(Int64?.self, at: 3)
        type = try row.decode(MediaType.self, at: 4)
        byteSize = try row.decode(Int64.self, at: 5)
    }

    init(id: Int64, ownerID: Int64, purpose: MediaPurpose, conversationID: Int64?, type: MediaType, byteSize: Int64) {
        self.id = id
        self.ownerID = ownerID
        self.purpose = purpose
        self.conversationID = conversationID
        self.type = type
        self.byteSize = byteSize
    }
}

/// Stored as their raw values: a value in the database that no case names fails the row's decoding
/// rather than passing for another kind of medium.
extension MediaPurpose: PostgresDecodable {}
extension MediaType: PostgresDecodable {}
