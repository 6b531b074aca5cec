/// A type whose Swift arrays are a single Postgres value: `[Int64]` is `bigint[]`, `[String]` is
/// `text[]`, and `[UInt8]` is `bytea`.
///
/// One-dimensional arrays only; a `NULL` element cannot be decoded into `[Int64]` or `[String]`
/// (decoding fails naming the column), nor sent from them.
public protocol PostgresArrayElement: Sendable {
    /// The parameter an array of this type is sent as.
    static func postgresValue(forArray array: [Self]) -> PostgresValue

    /// Decodes the text form of an array value, or returns nil if it is not one.
    static func decodePostgresArray(_ text: ArraySlice<UInt8>) -> [Self]?
}

extension Array: PostgresDecodable where Element: PostgresArrayElement {
    public init?(postgresText text: ArraySlice<UInt8>) {
        guard let array = Element.decodePostgresArray(text) else { return nil }
        self = array
    }
}

extension Int64: PostgresArrayElement {
    public static func postgresValue(forArray array: [Int64]) -> PostgresValue {
        .int64Array(array)
    }

    public static func decodePostgresArray(_ text: ArraySlice<UInt8>) -> [Int64]? {
        ArrayLiteral.parse(text) { element in element.flatMap { Int64(postgresText: $0) } }
    }
}

extension String: PostgresArrayElement {
    public static func postgresValue(forArray array: [String]) -> PostgresValue {
        .textArray(array)
    }

    public static func decodePostgresArray(_ text: ArraySlice<UInt8>) -> [String]? {
        ArrayLiteral.parse(text) { element in element.map { String(decoding: $0, as: UTF8.self) } }
    }
}

extension UInt8: PostgresArrayElement {
    public static func postgresValue(forArray array: [UInt8]) -> PostgresValue {
        .bytea(array)
    }

    /// Decodes `bytea` in hex form (`\x0a1b…`), which every session is set to use.
    public static func decodePostgresArray(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count >= 2, text.count % 2 == 0,
            text[text.startIndex] == UInt8(ascii: "\\"),
            text[text.startIndex + 1] == UInt8(ascii: "x")
        else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(text.count / 2 - 1)
        var index = text.startIndex + 2
        while index < text.endIndex {
            guard let high = hexValue(text[index]), let low = hexValue(text[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
