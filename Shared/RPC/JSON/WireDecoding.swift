import Foundation

/// Decodes JSON off the wire: a request's params, and the result of a call to another service.
/// Foundation's `JSONDecoder` spends most of its time on bookkeeping per value (about 10 µs for
/// `tweets.getMany`'s 20 ids, and about a sixth of the tweets service's CPU under home-timeline
/// reads), so values are first decoded by `WireDecoder`: one pass of ``JSONScanner`` into a small
/// tree, read through a `Decoder` that keeps no state per value.
///
/// That decoder takes only what it can decode exactly as Foundation's (as ``JSONCoding``
/// configures it) would. Anything else (a failure of any kind, a number that is not a plain integer
/// where an integer is asked for, a duplicated key, …) sends the whole text to Foundation's decoder
/// instead, so what a caller sees, a value or an error message naming the field, is Foundation's in
/// every case but one: a string that escapes a lone surrogate, which Foundation refuses as "not
/// valid JSON" without saying where, fails with the path of the field that holds it.
public enum WireDecoding {
    public static func decode<T: Decodable>(_ type: T.Type, from json: Data) throws -> T {
        if let value = try WireDecoder.decode(type, from: json) { return value }
        return try JSONCoding.decoder().decode(type, from: json)
    }
}

/// A parsed JSON value; objects keep their members in order (they have few, so finding one by a
/// linear search costs less than hashing).
enum JSONNode {
    case null
    case bool(Bool)
    /// The number's text, and whether it is a plain integer (no fraction, no exponent).
    case number(String, isInteger: Bool)
    case string(String)
    case array([JSONNode])
    case object([(key: String, value: JSONNode)])
    /// A string that escapes a lone surrogate (`"\ud800"`): no text. Foundation's decoder refuses
    /// the whole JSON text when a value reads one.
    case loneSurrogate

    /// Objects with up to this many members are searched one member after another; larger ones
    /// through a hash table.
    static let linearSearchLimit = 16
}

extension JSONScanner {
    /// Reads the value that starts here into a tree; nil where Foundation's decoder must decide: an
    /// object with a key twice.
    mutating func node(depth: Int) throws(Failure) -> JSONNode? {
        switch peek() {
        case 0x7B:  // {
            var members: [(key: String, value: JSONNode)] = []
            // Keys seen, once there are too many to compare with each: a hostile object of 100,000
            // keys would cost billions of comparisons.
            var keys: Set<String> = []
            var duplicated = false
            try object(depth: depth) { (key, scanner: inout JSONScanner) throws(Failure) in
                guard let value = try scanner.node(depth: depth + 1) else {
                    duplicated = true
                    return
                }
                if members.count < JSONNode.linearSearchLimit {
                    if members.contains(where: { $0.key == key }) { duplicated = true }
                } else {
                    if keys.isEmpty { keys = Set(members.lazy.map(\.key)) }
                    if !keys.insert(key).inserted { duplicated = true }
                }
                members.append((key, value))
            }
            return duplicated ? nil : .object(members)
        case 0x5B:  // [
            guard depth < Self.maximumDepth else { throw .tooDeep }
            try expect(0x5B)
            var elements: [JSONNode] = []
            if peek() == 0x5D {
                try expect(0x5D)
                return .array(elements)
            }
            while true {
                guard let element = try node(depth: depth + 1) else { return nil }
                elements.append(element)
                switch peek() {
                case 0x2C: try expect(0x2C)
                case 0x5D: try expect(0x5D); return .array(elements)
                default: throw .malformed
                }
            }
        case 0x22:
            return try string(refusingLoneSurrogates: true).map(JSONNode.string) ?? .loneSurrogate
        case 0x74: try literal("true"); return .bool(true)
        case 0x66: try literal("false"); return .bool(false)
        case 0x6E: try literal("null"); return .null
        case nil: throw .malformed
        default:
            let (range, isInteger) = try number()
            return .number(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self), isInteger: isInteger)
        }
    }
}

/// The `Decoder` of ``WireDecoding``: one object for the whole decoding, as Foundation's is,
/// which points at the value being decoded and keeps the path to it as a stack, so a nested value
/// costs no allocation. A value it cannot vouch for sets `gaveUp`, and the caller then ignores
/// whatever the decoding returned or threw: a type's `init(from:)` might catch the failure and go
/// on differently from how it would with Foundation.
final class WireDecoder: Decoder, SingleValueDecodingContainer {
    /// Thrown for a value this decoder leaves to Foundation; `gaveUp` is set by then.
    struct Unsupported: Error {}

    private(set) var node: JSONNode
    private(set) var codingPath: [any CodingKey] = []
    private(set) var gaveUp = false
    /// Where the first string that escapes a lone surrogate was asked for, if one was.
    private(set) var loneSurrogatePath: [any CodingKey]?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private init(node: JSONNode) {
        self.node = node
        codingPath.reserveCapacity(8)
    }

    /// The value `json` holds, or nil when Foundation's decoder must decide. A string the value
    /// reads that escapes a lone surrogate fails with its path named, where Foundation's decoder
    /// would only say that the text is not valid JSON (one it does not read, Foundation lets be too).
    static func decode<T: Decodable>(_ type: T.Type, from json: Data) throws(DecodingError) -> T? {
        let root: JSONNode? = json.withUnsafeBytes { bytes in
            var scanner = JSONScanner(bytes)
            guard let node = try? scanner.node(depth: 0), (try? scanner.expectEnd()) != nil else { return nil }
            return node
        }
        guard let root else { return nil }
        let decoder = WireDecoder(node: root)
        let value = try? decoder.decodeValue(T.self)
        if let path = decoder.loneSurrogatePath {
            throw DecodingError.dataCorrupted(.init(
                codingPath: path,
                debugDescription: "it escapes a lone surrogate (\\uD800 to \\uDFFF without its pair), which is no character"))
        }
        guard let value, !decoder.gaveUp else { return nil }
        return value
    }

    func giveUp() -> Unsupported {
        gaveUp = true
        return Unsupported()
    }

    /// Fails for a string that escapes a lone surrogate, noting where the first one was.
    private func refuseLoneSurrogate() -> Unsupported {
        if loneSurrogatePath == nil { loneSurrogatePath = codingPath }
        return Unsupported()
    }

    /// Fails as Foundation fails for a value of the wrong kind (the message never reaches a caller).
    func mismatch(_ type: Any.Type) -> DecodingError {
        DecodingError.typeMismatch(type, .init(codingPath: codingPath, debugDescription: "mismatch"))
    }

    /// Decodes `node`, found under `key` in the value being decoded now.
    func decode<T: Decodable>(_ type: T.Type, node nested: JSONNode, key: any CodingKey) throws -> T {
        let outer = node
        node = nested
        codingPath.append(key)
        defer {
            codingPath.removeLast()
            node = outer
        }
        return try decodeValue(type)
    }

    /// Decodes the value being decoded now. Dates are read as the strategy of ``JSONCoding`` reads
    /// them; Foundation decodes data, URLs and decimals in ways of its own (base64, URL checks), so
    /// they are left to it, as floats are (`decode(Float.self)`).
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == String.self { return try decodeString() as! T }
        if T.self == Bool.self { return try decodeBool() as! T }
        if T.self == Int.self { return try decodeInteger(Int.self) as! T }
        if T.self == Int64.self { return try decodeInteger(Int64.self) as! T }
        if T.self == Double.self { return try decodeDouble() as! T }
        if T.self == Date.self { return try decodeDate() as! T }
        if T.self == JSONValue.self { return try jsonValue(of: node) as! T }
        if T.self == Data.self || T.self == URL.self || T.self == Decimal.self { throw giveUp() }
        return try T(from: self)
    }

    /// `node` built directly into a `JSONValue`, as `JSONValue.init(from:)` would read it through
    /// this decoder but without trying one kind after another (each miss a thrown error, five for an
    /// object): a plain integer that fits is `.int`; any other number is left to Foundation.
    private func jsonValue(of node: JSONNode) throws -> JSONValue {
        switch node {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .number(let text, let isInteger):
            guard isInteger, let value = Int64(text) else { throw giveUp() }
            return .int(value)
        case .string(let text): return .string(text)
        case .loneSurrogate: throw refuseLoneSurrogate()
        case .array(let elements): return .array(try elements.map(jsonValue(of:)))
        case .object(let members):
            var fields: [String: JSONValue] = [:]
            fields.reserveCapacity(members.count)
            for member in members { fields[member.key] = try jsonValue(of: member.value) }
            return .object(fields)
        }
    }

    func decodeString() throws -> String {
        if case .loneSurrogate = node { throw refuseLoneSurrogate() }
        guard case .string(let text) = node else { throw mismatch(String.self) }
        return text
    }

    /// RFC 3339 text, as the date strategy of ``JSONCoding`` reads it; it has the error message.
    func decodeDate() throws -> Date {
        if case .loneSurrogate = node { throw refuseLoneSurrogate() }
        guard case .string(let text) = node, let date = RFC3339.parse(text) else { throw giveUp() }
        return date
    }

    func decodeBool() throws -> Bool {
        guard case .bool(let value) = node else { throw mismatch(Bool.self) }
        return value
    }

    /// Plain integers that fit; Foundation has rules of its own for `1.0`, `1e2` and overflow.
    func decodeInteger<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        guard case .number(let text, let isInteger) = node else { throw mismatch(type) }
        guard isInteger, let value = I(text) else { throw giveUp() }
        return value
    }

    func decodeDouble() throws -> Double {
        guard case .number(let text, _) = node else { throw mismatch(Double.self) }
        guard let value = Double(text), value.isFinite else { throw giveUp() }
        return value
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = node else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(Keyed<Key>(members: members, decoder: self, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = node else { throw mismatch([Any].self) }
        return Unkeyed(elements: elements, decoder: self, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    // MARK: SingleValueDecodingContainer

    func decodeNil() -> Bool {
        if case .null = node { return true }
        return false
    }

    func decode(_ type: Bool.Type) throws -> Bool { try decodeBool() }
    func decode(_ type: String.Type) throws -> String { try decodeString() }
    func decode(_ type: Double.Type) throws -> Double { try decodeDouble() }
    func decode(_ type: Float.Type) throws -> Float { throw giveUp() }
    func decode(_ type: Int.Type) throws -> Int { try decodeInteger(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(type) }
}

extension WireDecoder {
    /// An object's members.
    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let members: [(key: String, value: JSONNode)]
        let decoder: WireDecoder
        let codingPath: [any CodingKey]
        /// Where each key is, for a large object (its keys are distinct: see `node(depth:)`).
        private let index: [String: Int]?

        init(members: [(key: String, value: JSONNode)], decoder: WireDecoder, codingPath: [any CodingKey]) {
            self.members = members
            self.decoder = decoder
            self.codingPath = codingPath
            index = members.count > JSONNode.linearSearchLimit
                ? Dictionary(members.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { first, _ in first }) : nil
        }

        var allKeys: [Key] { members.compactMap { Key(stringValue: $0.key) } }

        func contains(_ key: Key) -> Bool { position(of: key.stringValue) != nil }

        private func position(of name: String) -> Int? {
            if let index { return index[name] }
            return members.firstIndex { $0.key == name }
        }

        private func member(_ key: Key) throws -> JSONNode {
            guard let position = position(of: key.stringValue) else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing"))
            }
            return members[position].value
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            if case .null = try member(key) { return true }
            return false
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try decoder.decode(type, node: member(key), key: key)
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            guard case .object(let members) = try member(key) else { throw decoder.mismatch([String: Any].self) }
            return KeyedDecodingContainer(Keyed<NestedKey>(members: members, decoder: decoder, codingPath: codingPath + [key]))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            guard case .array(let elements) = try member(key) else { throw decoder.mismatch([Any].self) }
            return Unkeyed(elements: elements, decoder: decoder, codingPath: codingPath + [key])
        }

        func superDecoder() throws -> any Decoder { throw decoder.giveUp() }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw decoder.giveUp() }
    }

    /// An array's elements, in order.
    struct Unkeyed: UnkeyedDecodingContainer {
        let elements: [JSONNode]
        let decoder: WireDecoder
        let codingPath: [any CodingKey]
        private(set) var currentIndex = 0

        init(elements: [JSONNode], decoder: WireDecoder, codingPath: [any CodingKey]) {
            self.elements = elements
            self.decoder = decoder
            self.codingPath = codingPath
        }

        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        /// The next element; the index moves on only once it decoded.
        private func next(_ type: Any.Type) throws -> JSONNode {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "at end"))
            }
            return elements[currentIndex]
        }

        mutating func decodeNil() throws -> Bool {
            guard case .null = try next(Never.self) else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let value = try decoder.decode(type, node: next(type), key: Index(currentIndex))
            currentIndex += 1
            return value
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            guard case .object(let members) = try next(type) else { throw decoder.mismatch([String: Any].self) }
            let container = Keyed<NestedKey>(members: members, decoder: decoder, codingPath: codingPath + [Index(currentIndex)])
            currentIndex += 1
            return KeyedDecodingContainer(container)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            guard case .array(let elements) = try next([Any].self) else { throw decoder.mismatch([Any].self) }
            let container = Unkeyed(elements: elements, decoder: decoder, codingPath: codingPath + [Index(currentIndex)])
            currentIndex += 1
            return container
        }

        mutating func superDecoder() throws -> any Decoder { throw decoder.giveUp() }
    }

    /// An array element's place in a coding path.
    struct Index: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }

        init(_ index: Int) { intValue = index }
        init?(intValue: Int) { self.intValue = intValue }
        init?(stringValue: String) { nil }
    }
}
