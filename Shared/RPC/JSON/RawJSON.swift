import Foundation

/// Bytes that are already one valid JSON text. A handler that returns it has its result
/// spliced into the response as is, so cached JSON is never decoded and encoded again.
public struct RawJSON: Sendable, Hashable {
    public let bytes: [UInt8]

    /// The caller promises `bytes` is a single valid JSON text.
    public init(unchecked bytes: [UInt8]) {
        self.bytes = bytes
    }

    public init(encoding value: some Encodable) throws {
        self.bytes = try WireEncoding.encode(value)
    }

    public static let null = RawJSON(unchecked: Array("null".utf8))
    public static let emptyObject = RawJSON(unchecked: Array("{}".utf8))

    /// Joins already-encoded values into one JSON array.
    public static func array(_ elements: [RawJSON]) -> RawJSON {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(elements.reduce(2) { $0 + $1.bytes.count + 1 })
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: element.bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        return RawJSON(unchecked: bytes)
    }

    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try WireDecoding.decode(type, from: Data(bytes))
    }
}

extension RawJSON: Codable {
    public init(from decoder: any Decoder) throws {
        self = try RawJSON(encoding: JSONValue(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try JSONCoding.decoder().decode(JSONValue.self, from: Data(bytes)).encode(to: encoder)
    }
}
