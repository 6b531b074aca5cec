import AviaryAPI
import Postgres

/// One page of the ids of a list read by keyset (``AviaryAPI/KeysetCursor``), in the list's order.
public struct KeysetPage: Sendable {
    public var ids: [Int64]
    /// Where the next page starts; nil on the last page.
    public var next: KeysetCursor?

    /// The page in `rows`, read with `LIMIT limit + 1`: each row holds an id (column 0) and the
    /// list's sort key (column `keyColumn`; 0 for a list ordered by id alone). The extra row only
    /// tells that a next page exists, which starts after the last row kept.
    public init(rows: PostgresRows, limit: Int, keyColumn: Int = 1) throws {
        ids = try rows.prefix(limit).map { try $0.decode(Int64.self, at: 0) }
        guard rows.count > limit, let last = ids.last else { return }
        next = KeysetCursor(key: try rows[ids.count - 1].decode(Int64.self, at: keyColumn), id: last)
    }
}
