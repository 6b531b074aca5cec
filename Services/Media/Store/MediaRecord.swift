import Postgres

/// A finished medium, as `media.items` holds it. Never changes once written, so it may be cached.
/// Its ``MediaHead``'s fields read as its own (`record.ownerID`).
@dynamicMemberLookup
struct MediaRecord: Sendable {
    var head: MediaHead
    /// Lower-case hex; names the content in storage and is the strong ETag.
    var sha256: String
    var width: Int?
    var height: Int?
    var durationMs: Int64?

    subscript<Value>(dynamicMember field: KeyPath<MediaHead, Value>) -> Value { head[keyPath: field] }

    static let columns = MediaHead.columns + ", sha256, width, height, duration_ms"
}

extension MediaRecord {
    /// Reads a row selected with ``columns``.
    init(row: PostgresRow) throws {
        head = try MediaHead(row: row)
        let first = MediaHead.columnCount
        sha256 = try row.decode(String.self, at: first)
        width = try row.decode(Int?.self, at: first + 1)
        height = try row.decode(Int?.self, at: first + 2)
        durationMs = try row.decode(Int64?.self, at: first + 3)
    }
}
