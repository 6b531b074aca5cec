import AviaryAPI
import Postgres

/// A finished medium, as `media.items` holds it. Its content never changes; its description and
/// focal point may (`media.describe`), which every process's ``MediaCatalog`` is told of.
/// Its ``MediaHead``'s fields read as its own (`record.ownerID`).
@dynamicMemberLookup
struct MediaRecord: Sendable {
    var head: MediaHead
    /// Lower-case hex; names the content in storage and is the strong ETag.
    var sha256: String
    var width: Int?
    var height: Int?
    var durationMs: Int64?
    var description: String?
    var focus: MediaFocus?

    subscript<Value>(dynamicMember field: KeyPath<MediaHead, Value>) -> Value { head[keyPath: field] }

    static let columns = MediaHead.columns + ", sha256, width, height, duration_ms, description, focus_x, focus_y"
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
        description = try row.decode(String?.self, at: first + 4)
        if let x = try row.decode(Double?.self, at: first + 5), let y = try row.decode(Double?.self, at: first + 6) {
            focus = MediaFocus(x: x, y: y)
        }
    }
}
