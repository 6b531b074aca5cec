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

extension RawJSON {
    /// The members of this object that `keys` names and whose values are strings, read in one pass
    /// of ``JSONScanner`` without building a tree of the rest; nil when the text is not one object.
    public func strings(named keys: [String]) -> [String: String]? {
        bytes.withUnsafeBytes { buffer -> [String: String]? in
            var scanner = JSONScanner(buffer)
            var found: [String: String] = [:]
            do {
                guard scanner.peek() == 0x7B else { return nil }  // {
                try scanner.object(depth: 0) { (key, scanner: inout JSONScanner) throws(JSONScanner.Failure) in
                    if scanner.peek() == 0x22, keys.contains(key) {  // "
                        found[key] = try scanner.string()
                    } else {
                        try scanner.skipValue(depth: 1)
                    }
                }
                try scanner.expectEnd()
            } catch {
                return nil
            }
            return found
        }
    }
}
