import CLibPQ
import Foundation

/// Statement parameters laid out for `PQexecParams`/`PQexecPrepared`: all values in one buffer,
/// text ones NUL-terminated (libpq reads text parameters as C strings), `bytea` in binary form.
struct PostgresBindings {
    private(set) var types: [Oid] = []
    private var formats: [Int32] = []
    private var lengths: [Int32] = []
    /// Where each value starts in `bytes`; nil for NULL.
    private var starts: [Int?] = []
    private var bytes: [UInt8] = []

    var count: Int { types.count }

    init(_ parameters: [any PostgresEncodable]) throws {
        // The protocol counts parameters in 16 bits.
        guard parameters.count <= Int(UInt16.max) else {
            throw PostgresError(code: .encodingFailed, reason: "more than 65535 parameters")
        }
        types.reserveCapacity(parameters.count)
        formats.reserveCapacity(parameters.count)
        lengths.reserveCapacity(parameters.count)
        starts.reserveCapacity(parameters.count)
        for (index, parameter) in parameters.enumerated() {
            try append(parameter.postgresValue, number: index + 1)
        }
    }

    private mutating func append(_ value: PostgresValue, number: Int) throws {
        let start = bytes.count
        let type: Oid
        var binary = false
        var valid = true
        var problem = "contains a NUL byte, which Postgres text cannot hold"
        switch value {
        case .null:
            types.append(PostgresTypeOID.unknown)
            formats.append(0)
            lengths.append(0)
            starts.append(nil)
            return
        case .bool(let value):
            type = PostgresTypeOID.bool
            bytes.append(value ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case .int16(let value):
            type = PostgresTypeOID.int2
            bytes.append(contentsOf: String(value).utf8)
        case .int32(let value):
            type = PostgresTypeOID.int4
            bytes.append(contentsOf: String(value).utf8)
        case .int64(let value):
            type = PostgresTypeOID.int8
            bytes.append(contentsOf: String(value).utf8)
        case .double(let value):
            type = PostgresTypeOID.float8
            // Swift writes the shortest text that reads back exactly; Postgres reads "nan" and "inf".
            bytes.append(contentsOf: String(value).utf8)
        case .text(let value):
            type = PostgresTypeOID.text
            valid = appendText(value)
        case .bytea(let value):
            type = PostgresTypeOID.bytea
            binary = true
            bytes.append(contentsOf: value)
        case .timestamp(let value):
            type = PostgresTypeOID.timestamptz
            valid = PostgresTimestamp.append(value, to: &bytes)
            problem = "is a date outside the range Postgres can store"
        case .uuid(let value):
            type = PostgresTypeOID.uuid
            bytes.append(contentsOf: value.uuidString.utf8)
        case .json(let value):
            type = PostgresTypeOID.jsonb
            valid = appendText(value)
        case .int64Array(let value):
            type = PostgresTypeOID.int8Array
            ArrayLiteral.append(value, to: &bytes)
        case .textArray(let value):
            type = PostgresTypeOID.textArray
            valid = ArrayLiteral.append(value, to: &bytes)
        }
        guard valid else {
            throw PostgresError(code: .encodingFailed, reason: "parameter $\(number) \(problem)")
        }
        let length = bytes.count - start
        guard length <= Int(Int32.max) else {
            throw PostgresError(code: .encodingFailed, reason: "parameter $\(number) is too large")
        }
        // Text values need it; binary ones get it too so that an empty one still has an address
        // (libpq takes a null pointer for NULL).
        bytes.append(0)
        types.append(type)
        formats.append(binary ? 1 : 0)
        lengths.append(Int32(length))
        starts.append(start)
    }

    /// Appends UTF-8 text; false if it contains a NUL byte, which would silently cut a C string.
    private mutating func appendText(_ text: String) -> Bool {
        let start = bytes.count
        bytes.append(contentsOf: text.utf8)
        return !bytes[start...].contains(0)
    }

    /// Calls `body` with libpq's parameter arrays: values, lengths and formats.
    func withParameters<Result>(
        _ body: (
            UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?
        ) throws -> Result
    ) rethrows -> Result {
        try bytes.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress)
            let values: [UnsafePointer<CChar>?] = starts.map { start in
                start.flatMap { base?.advanced(by: $0).assumingMemoryBound(to: CChar.self) }
            }
            return try values.withUnsafeBufferPointer { values in
                try lengths.withUnsafeBufferPointer { lengths in
                    try formats.withUnsafeBufferPointer { formats in
                        try body(values.baseAddress, lengths.baseAddress, formats.baseAddress)
                    }
                }
            }
        }
    }
}
