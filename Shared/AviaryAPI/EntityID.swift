import AviaryJSON
import RPC

/// A 64-bit, time-ordered id (contract §2). On the wire it is a string of decimal digits, so that
/// JavaScript clients keep every digit; anything else is refused with a `validation` error naming
/// the field.
public struct EntityID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let value: Int64

    public init(_ value: Int64) {
        self.value = value
    }

    /// Parses the wire form; nil unless it is 1–19 decimal digits of a positive Int64.
    public init?(_ text: String) {
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let value = Int64(text), value > 0
        else { return nil }
        self.value = value
    }

    public var description: String { String(value) }

    public static func < (lhs: EntityID, rhs: EntityID) -> Bool { lhs.value < rhs.value }
}

extension EntityID: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // The field's name only for an error: building it for every id of a batch cost more than
        // decoding the batch.
        guard let text = try? container.decode(String.self) else {
            let field = decoder.codingPath.fieldName
            throw RPCError.validation("\(field) must be an id: a string of decimal digits", field: field)
        }
        guard let id = EntityID(text) else {
            let field = decoder.codingPath.fieldName
            throw RPCError.validation(
                "\(field) must be an id: a string of 1 to 19 decimal digits, got '\(text.prefix(40))'", field: field)
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(value))
    }
}

extension EntityID: JSONSchemaDescribing {
    public static var jsonSchema: JSONValue { ["type": "string", "pattern": "^[0-9]{1,19}$"] }
}

extension [any CodingKey] {
    /// The dotted name of the value being decoded, as error messages show it (`params` excluded).
    public var fieldName: String {
        let names = filter { $0.stringValue != "params" }.map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue }
        let joined = names.reduce("") { result, name in
            name.hasPrefix("[") || result.isEmpty ? result + name : result + "." + name
        }
        return joined.isEmpty ? "value" : joined
    }
}

extension [EntityID] {
    /// The ids as numbers, for a batch method that takes at most `maximum`; more is a `validation`
    /// error naming `field`.
    public func values(atMost maximum: Int, field: String = "ids") throws(RPCError) -> [Int64] {
        guard count <= maximum else {
            throw RPCError.validation("\(field) must hold at most \(maximum) ids, got \(count)", field: field)
        }
        return map(\.value)
    }
}
