/// One row of `PostgresRows`; decode its values by position or by column name:
/// `try row.decode(Int64.self, at: 0)`, `try row.decode(String?.self, column: "bio")`.
public struct PostgresRow: Sendable {
    let storage: PostgresRows.Storage
    let row: Int

    /// The result column names, in order.
    public var columns: [String] { storage.columns }

    /// Decodes the value at `index` (0-based). A `NULL` needs an `Optional` type; a missing
    /// column, a `NULL` for a non-optional type or text that is not a `T` throws
    /// `PostgresError` (`.decodingFailed`) naming the column and the type.
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, at index: Int) throws -> T {
        guard storage.columns.indices.contains(index) else {
            throw PostgresError(
                code: .decodingFailed,
                reason: "no column at index \(index) (the result has \(storage.columns.count))")
        }
        let cell = storage.cells[row * storage.columns.count + index]
        let value =
            cell.count < 0
            ? T.postgresNull : T(postgresText: storage.bytes[cell.start..<cell.start + cell.count])
        guard let value else {
            let name = storage.columns[index]
            let problem =
                cell.count < 0
                ? "is NULL, which \(T.self) cannot hold"
                : "(type oid \(storage.columnTypes[index])) is not a valid \(T.self)"
            throw PostgresError(
                code: .decodingFailed, reason: "column \"\(name)\" \(problem)", column: name)
        }
        return value
    }

    /// Decodes the value of the first column called `name`; see `decode(_:at:)`.
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, column name: String) throws
        -> T
    {
        guard let index = storage.columns.firstIndex(of: name) else {
            throw PostgresError(
                code: .decodingFailed, reason: "no column named \"\(name)\" in the result",
                column: name)
        }
        return try decode(type, at: index)
    }

    /// Whether the value at `index` is `NULL` (false for a missing column).
    public func isNull(at index: Int) -> Bool {
        storage.columns.indices.contains(index)
            && storage.cells[row * storage.columns.count + index].count < 0
    }
}
