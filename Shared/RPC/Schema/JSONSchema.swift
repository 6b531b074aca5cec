import AviaryJSON
import Foundation

/// A type that states its own JSON Schema, for shapes inference cannot see (enums, custom coding).
public protocol JSONSchemaDescribing {
    static var jsonSchema: JSONValue { get }
}

/// A string enum whose schema lists its cases; inference also uses its first case as a sample.
/// Decoding a string that names no case fails with a message that lists the cases.
public protocol JSONSchemaEnum: CaseIterable, RawRepresentable, Decodable where RawValue == String {}

extension JSONSchemaEnum {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Self(rawValue: text) else {
            let cases = Self.allCases.map(\.rawValue).joined(separator: ", ")
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "it must be one of \(cases), not '\(text.prefix(40))'")
        }
        self = value
    }
}

/// An empty params or result object.
public struct Empty: Codable, Sendable, Hashable {
    public init() {}
}

/// JSON Schemas (draft 2020-12 subset) inferred from `Decodable` types, so the OpenRPC document
/// always matches what the handlers really decode. Inference runs each type's `init(from:)`
/// against a recording decoder: required members are those decoded with `decode`, optional ones
/// with `decodeIfPresent`.
public enum JSONSchema {
    public static func of(_ type: Any.Type) -> JSONValue {
        if let describing = type as? any JSONSchemaDescribing.Type { return describing.jsonSchema }
        if type == RawJSON.self { return [:] }
        guard let decodable = type as? any Decodable.Type else { return [:] }
        let recorder = SchemaRecorder()
        return recorder.schema(for: decodable) ?? [:]
    }
}

/// Walks a type's decoding and builds its schema.
final class SchemaRecorder {
    private var stack: [ObjectIdentifier] = []

    func schema(for type: any Decodable.Type) -> JSONValue? {
        if let primitive = Self.primitiveSchema(type) { return primitive }
        if let describing = type as? any JSONSchemaDescribing.Type { return describing.jsonSchema }
        if let enumeration = type as? any JSONSchemaEnum.Type { return Self.enumSchema(enumeration) }
        let id = ObjectIdentifier(type)
        if stack.contains(id) { return ["type": "object"] }
        stack.append(id)
        defer { stack.removeLast() }
        let node = SchemaNode()
        _ = try? type.init(from: SchemaDecoder(recorder: self, node: node))
        return node.schema
    }

    /// A sample value of `type`, so that decoding of the enclosing type can carry on.
    func sample<T: Decodable>(_ type: T.Type, node: SchemaNode) throws -> T {
        if let value = Self.primitiveSample(type) { return value }
        if let enumeration = type as? any JSONSchemaEnum.Type {
            node.kind = .leaf(Self.enumSchema(enumeration))
            return Self.firstCase(enumeration) as! T
        }
        if let describing = type as? any JSONSchemaDescribing.Type {
            // Its own schema wins; decoding into a scratch node only yields a sample value.
            let value = try T(from: SchemaDecoder(recorder: self, node: SchemaNode()))
            node.kind = .leaf(describing.jsonSchema)
            return value
        }
        let id = ObjectIdentifier(type)
        if stack.contains(id) {
            node.kind = .leaf(["type": "object"])
            throw SchemaDecoder.Recursion()
        }
        stack.append(id)
        defer { stack.removeLast() }
        return try T(from: SchemaDecoder(recorder: self, node: node))
    }

    static func primitiveSchema(_ type: Any.Type) -> JSONValue? {
        switch type {
        case is String.Type: ["type": "string"]
        case is Bool.Type: ["type": "boolean"]
        case is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type, is Int8.Type, is UInt.Type, is UInt64.Type,
            is UInt32.Type, is UInt16.Type, is UInt8.Type:
            ["type": "integer"]
        case is Double.Type, is Float.Type: ["type": "number"]
        case is Date.Type: ["type": "string", "format": "date-time"]
        case is JSONValue.Type, is RawJSON.Type: [:]
        case is Empty.Type: ["type": "object"]
        default: nil
        }
    }

    private static func primitiveSample<T>(_ type: T.Type) -> T? {
        switch type {
        case is String.Type: return "1" as? T
        case is Bool.Type: return false as? T
        case is Int.Type: return 1 as? T
        case is Int64.Type: return Int64(1) as? T
        case is Int32.Type: return Int32(0) as? T
        case is Int16.Type: return Int16(0) as? T
        case is Int8.Type: return Int8(0) as? T
        case is UInt.Type: return UInt(0) as? T
        case is UInt64.Type: return UInt64(0) as? T
        case is UInt32.Type: return UInt32(0) as? T
        case is UInt16.Type: return UInt16(0) as? T
        case is UInt8.Type: return UInt8(0) as? T
        case is Double.Type: return 0.0 as? T
        case is Float.Type: return Float(0) as? T
        case is Date.Type: return Date(timeIntervalSince1970: 0) as? T
        case is JSONValue.Type: return JSONValue.null as? T
        case is RawJSON.Type: return RawJSON.null as? T
        default: return nil
        }
    }

    private static func enumSchema<E: JSONSchemaEnum>(_ type: E.Type) -> JSONValue {
        ["type": "string", "enum": .array(type.allCases.map { .string($0.rawValue) })]
    }

    private static func firstCase<E: JSONSchemaEnum>(_ type: E.Type) -> E {
        type.allCases.first!
    }
}

/// The schema being recorded for one value.
final class SchemaNode {
    enum Kind {
        case unknown
        case leaf(JSONValue)
        case object(properties: [(String, SchemaNode)], required: [String])
        case array(items: SchemaNode)
    }

    var kind: Kind = .unknown
    /// Members whose decoding first asked whether they are null: optional ones.
    var optionalKeys: Set<String> = []

    var schema: JSONValue {
        switch kind {
        case .unknown: return [:]
        case .leaf(let schema): return schema
        case .array(let items): return ["type": "array", "items": items.schema]
        case .object(let properties, let required):
            var fields: [String: JSONValue] = [:]
            for (name, node) in properties { fields[name] = node.schema }
            var schema: JSONValue = ["type": "object", "properties": .object(fields)]
            if case .object(var members) = schema, !required.isEmpty {
                members["required"] = .array(required.map { .string($0) })
                schema = .object(members)
            }
            return schema
        }
    }

    func addProperty(_ name: String, required: Bool) -> SchemaNode {
        let child = SchemaNode()
        if case .object(var properties, var requiredNames) = kind {
            properties.removeAll { $0.0 == name }
            properties.append((name, child))
            if required && !requiredNames.contains(name) { requiredNames.append(name) }
            kind = .object(properties: properties, required: requiredNames)
        } else {
            kind = .object(properties: [(name, child)], required: required ? [name] : [])
        }
        return child
    }
}

/// A decoder that answers every question with a sample value while recording the shape asked for.
struct SchemaDecoder: Decoder {
    struct Recursion: Error {}

    let recorder: SchemaRecorder
    let node: SchemaNode
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if case .unknown = node.kind { node.kind = .object(properties: [], required: []) }
        return KeyedDecodingContainer(KeyedSchemaContainer<Key>(recorder: recorder, node: node))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let items = SchemaNode()
        node.kind = .array(items: items)
        return UnkeyedSchemaContainer(recorder: recorder, items: items)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleSchemaContainer(recorder: recorder, node: node)
    }
}

private struct KeyedSchemaContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let recorder: SchemaRecorder
    let node: SchemaNode
    var codingPath: [any CodingKey] = []
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }

    /// Only asked on the way to an optional value (the standard `decodeIfPresent` of primitives).
    func decodeNil(forKey key: Key) throws -> Bool {
        node.optionalKeys.insert(key.stringValue)
        return false
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let child = node.addProperty(key.stringValue, required: !node.optionalKeys.contains(key.stringValue))
        if let schema = SchemaRecorder.primitiveSchema(type) { child.kind = .leaf(schema) }
        return try recorder.sample(type, node: child)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        let child = node.addProperty(key.stringValue, required: false)
        if let schema = SchemaRecorder.primitiveSchema(type) { child.kind = .leaf(schema) }
        do {
            return try recorder.sample(type, node: child)
        } catch is SchemaDecoder.Recursion {
            return nil
        }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let child = node.addProperty(key.stringValue, required: true)
        child.kind = .object(properties: [], required: [])
        return KeyedDecodingContainer(KeyedSchemaContainer<NestedKey>(recorder: recorder, node: child))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let child = node.addProperty(key.stringValue, required: true)
        let items = SchemaNode()
        child.kind = .array(items: items)
        return UnkeyedSchemaContainer(recorder: recorder, items: items)
    }

    func superDecoder() throws -> any Decoder { SchemaDecoder(recorder: recorder, node: node) }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        SchemaDecoder(recorder: recorder, node: node.addProperty(key.stringValue, required: true))
    }
}

/// Yields exactly one sample element, which is enough to learn the item schema.
private struct UnkeyedSchemaContainer: UnkeyedDecodingContainer {
    let recorder: SchemaRecorder
    let items: SchemaNode
    var codingPath: [any CodingKey] = []
    var count: Int? { 1 }
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex > 0 }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        currentIndex += 1
        if let schema = SchemaRecorder.primitiveSchema(type) { items.kind = .leaf(schema) }
        return try recorder.sample(type, node: items)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        currentIndex += 1
        items.kind = .object(properties: [], required: [])
        return KeyedDecodingContainer(KeyedSchemaContainer<NestedKey>(recorder: recorder, node: items))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        currentIndex += 1
        let inner = SchemaNode()
        items.kind = .array(items: inner)
        return UnkeyedSchemaContainer(recorder: recorder, items: inner)
    }

    mutating func superDecoder() throws -> any Decoder { SchemaDecoder(recorder: recorder, node: items) }
}

private struct SingleSchemaContainer: SingleValueDecodingContainer {
    let recorder: SchemaRecorder
    let node: SchemaNode
    var codingPath: [any CodingKey] = []

    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let schema = SchemaRecorder.primitiveSchema(type) { node.kind = .leaf(schema) }
        return try recorder.sample(type, node: node)
    }
}
