import CLibPQ

/// The rows a statement returned, copied out of libpq's result (which is freed at once), in order.
///
/// Index it or iterate it for `PostgresRow`s; `columns` names the result columns.
public struct PostgresRows: Sendable, RandomAccessCollection {
    let storage: Storage

    /// The result column names, in order.
    public var columns: [String] { storage.columns }

    public var startIndex: Int { 0 }
    public var endIndex: Int { storage.rowCount }

    public subscript(position: Int) -> PostgresRow {
        precondition(indices.contains(position), "row index out of range")
        return PostgresRow(storage: storage, row: position)
    }

    /// Copies every value of `result` into one buffer: one allocation per result, not per value.
    init(copying result: OpaquePointer) {
        storage = Storage(copying: result)
    }

    /// The values of all rows, immutable once built.
    final class Storage: Sendable {
        let columns: [String]
        let columnTypes: [Oid]
        let rowCount: Int
        /// Where each value lies in `bytes`, row by row; `count` is -1 for NULL.
        let cells: [(start: Int, count: Int)]
        let bytes: [UInt8]

        init(copying result: OpaquePointer) {
            let rowCount = Int(PQntuples(result))
            let columnCount = Int(PQnfields(result))
            columns = (0..<Int32(columnCount)).map { String(cString: PQfname(result, $0)) }
            columnTypes = (0..<Int32(columnCount)).map { PQftype(result, $0) }
            self.rowCount = rowCount
            var cells: [(start: Int, count: Int)] = []
            cells.reserveCapacity(rowCount * columnCount)
            var total = 0
            for row in 0..<Int32(rowCount) {
                for column in 0..<Int32(columnCount) {
                    if PQgetisnull(result, row, column) != 0 {
                        cells.append((total, -1))
                    } else {
                        let count = Int(PQgetlength(result, row, column))
                        cells.append((total, count))
                        total += count
                    }
                }
            }
            // Made with no capacity, an array is the runtime's one shared empty array, whose
            // count the initializer still writes (zero over zero): two threads doing it at once
            // race (ThreadSanitizer saw it), so an empty result makes none.
            bytes = total == 0 ? [] : [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
                for (index, cell) in cells.enumerated() where cell.count > 0 {
                    let row = Int32(index / columnCount)
                    let column = Int32(index % columnCount)
                    let value = UnsafeRawPointer(PQgetvalue(result, row, column)!)
                    UnsafeMutableRawPointer(buffer.baseAddress! + cell.start)
                        .copyMemory(from: value, byteCount: cell.count)
                }
                initialized = total
            }
            self.cells = cells
        }
    }
}
