import Foundation

/// Decodes JSON off the wire: a request's params, and the result of a call to another service.
/// Foundation's `JSONDecoder` spends most of its time on bookkeeping per value (docs/perf.md,
/// "Choices in the code"), so values are first decoded by `WireDecoder`: one pass of
/// ``JSONScanner`` into a ``JSONValue`` tree, read through a `Decoder` that keeps no state per value.
///
/// That decoder takes only what it can decode exactly as Foundation's (as ``JSONCoding``
/// configures it) would. Anything else (a failure of any kind, a number that is not an integer
/// within `Int64` where an integer is asked for, a duplicated key, …) sends the whole text to
/// Foundation's decoder instead, so what a caller sees, a value or an error message naming the field, is Foundation's in
/// every case but one: a string that escapes a lone surrogate, which Foundation refuses as "not
/// valid JSON" without saying where, fails with the path of the field that holds it.
public enum WireDecoding {
    public static func decode<T: Decodable>(_ type: T.Type, from json: Data) throws -> T {
        if let value = try WireDecoder.decode(type, from: json) { return value }
        return try JSONCoding.decoder().decode(type, from: json)
    }
}

extension JSONScanner {
    /// Reads the value that starts here into a tree for ``WireDecoder``, a string that escapes a
    /// lone surrogate as ``loneSurrogateMarker``; nil where Foundation's decoder must decide: an
    /// object with a key twice, or a string that is the marker's text itself. `pending` holds the
    /// members of the objects being read (as it was again once this returns a value), so that each
    /// object's table is made once at its size rather than grown and rehashed member by member.
    mutating func wireValue(depth: Int, pending: inout [(key: String, value: JSONValue)]) throws(Failure) -> JSONValue? {
        switch peek() {
        case 0x7B:  // {
            let start = pending.count
            var undecided = false
            try object(depth: depth) { (key, scanner: inout JSONScanner) throws(Failure) in
                // A key that escapes a lone surrogate reads as U+FFFD, where Foundation's decoder
                // refuses the text (found by JSONFuzz): a key with U+FFFD is left to it.
                guard let value = try scanner.wireValue(depth: depth + 1, pending: &pending),
                    !key.unicodeScalars.contains("\u{FFFD}")
                else {
                    undecided = true
                    return
                }
                pending.append((key, value))
            }
            guard !undecided else { return nil }
            var members: [String: JSONValue] = Dictionary(minimumCapacity: pending.count - start)
            while pending.count > start {
                let (key, value) = pending.removeLast()
                guard members.updateValue(value, forKey: key) == nil else { return nil }
            }
            return .object(members)
        case 0x5B:  // [
            var elements: [JSONValue] = []
            var undecided = false
            try array(depth: depth) { (scanner: inout JSONScanner) throws(Failure) in
                guard let element = try scanner.wireValue(depth: depth + 1, pending: &pending) else {
                    undecided = true
                    return
                }
                elements.append(element)
            }
            return undecided ? nil : .array(elements)
        case 0x22:
            guard let text = try string(refusingLoneSurrogates: true) else { return .string(loneSurrogateMarker) }
            return isLoneSurrogateMarker(text) ? nil : .string(text)
        case 0x74: try literal("true"); return .bool(true)
        case 0x66: try literal("false"); return .bool(false)
        case 0x6E: try literal("null"); return .null
        case nil: throw .malformed
        default:
            let start = index
            let value = try numberValue()
            // Foundation's decoder refuses a number that is not zero but rounds to it (`1e-400`),
            // and some zeros written with an exponent (`0e5`, `0.00e5`; not `0e99` or `0.0e5`),
            // found by JSONFuzz: a zero written so is left to it.
            if case .double(let double) = value, double == 0, !isPlainZero(start..<index) { return nil }
            return value
        }
    }
}

/// What ``JSONScanner/wireValue(depth:pending:)`` reads a string that escapes a lone surrogate
/// (`"\ud800"`) as, having no text for it: Foundation's decoder fails to read one as a string (so
/// refuses the whole JSON text unless a type catches that), and ``WireDecoder`` fails likewise,
/// naming where, wherever a value reads this. A string that is this text itself sends the JSON
/// text to Foundation's decoder.
let loneSurrogateMarker = "\u{FFFD}(an escaped lone surrogate)\u{FFFD}"

private func isLoneSurrogateMarker(_ text: String) -> Bool {
    text.utf8.count == loneSurrogateMarker.utf8.count && text == loneSurrogateMarker
}

/// The `Decoder` of ``WireDecoding``: one object for the whole decoding, as Foundation's is,
/// which points at the value being decoded and keeps the path to it as a stack, so a nested value
/// costs no allocation. A value it cannot vouch for sets `gaveUp`, and the caller then ignores
/// whatever the decoding returned or threw: a type's `init(from:)` might catch the failure and go
/// on differently from how it would with Foundation.
final class WireDecoder: Decoder, SingleValueDecodingContainer {
    /// Thrown for a value this decoder leaves to Foundation; `gaveUp` is set by then.
    struct Unsupported: Error {}

    /// The value being decoded now.
    private(set) var current: JSONValue
    private(set) var codingPath: [any CodingKey] = []
    private(set) var gaveUp = false
    /// Thrown for a string that escapes a lone surrogate, with where it is.
    struct LoneSurrogate: Error {
        let codingPath: [any CodingKey]
    }

    /// Whether a string that escapes a lone surrogate was asked for.
    private(set) var refusedLoneSurrogate = false
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private init(root: JSONValue) {
        current = root
        codingPath.reserveCapacity(8)
    }

    /// The value `json` holds, or nil when Foundation's decoder must decide. A string the value
    /// reads that escapes a lone surrogate fails with its path named, where Foundation's decoder
    /// would only say that the text is not valid JSON (one it does not read, Foundation lets be too).
    /// A type that catches that failure and goes on is left to Foundation, whose error it would
    /// have caught instead (as `LenientParams` in WireDecodingTests does; found by JSONFuzz).
    static func decode<T: Decodable>(_ type: T.Type, from json: Data) throws(DecodingError) -> T? {
        let root: JSONValue? = json.withUnsafeBytes { bytes in
            var scanner = JSONScanner(bytes)
            var pending: [(key: String, value: JSONValue)] = []
            guard let root = try? scanner.wireValue(depth: 0, pending: &pending), (try? scanner.expectEnd()) != nil else {
                return nil
            }
            return root
        }
        guard let root else { return nil }
        let decoder = WireDecoder(root: root)
        let value = Result { try decoder.decodeValue(T.self) }
        guard !decoder.gaveUp else { return nil }
        if decoder.refusedLoneSurrogate {
            guard case .failure(let refusal as LoneSurrogate) = value else { return nil }
            throw DecodingError.dataCorrupted(.init(
                codingPath: refusal.codingPath,
                debugDescription: "it escapes a lone surrogate (\\uD800 to \\uDFFF without its pair), which is no character"))
        }
        return try? value.get()
    }

    func giveUp() -> Unsupported {
        gaveUp = true
        return Unsupported()
    }

    /// Fails for a string that escapes a lone surrogate, naming where it is.
    private func refuseLoneSurrogate() -> LoneSurrogate {
        refusedLoneSurrogate = true
        return LoneSurrogate(codingPath: codingPath)
    }

    /// Fails as Foundation fails for a value of the wrong kind (the message never reaches a caller).
    func mismatch(_ type: Any.Type) -> DecodingError {
        DecodingError.typeMismatch(type, .init(codingPath: codingPath, debugDescription: "mismatch"))
    }

    /// Decodes `value`, found under `key` in the value being decoded now.
    func decode<T: Decodable>(_ type: T.Type, value: JSONValue, key: any CodingKey) throws -> T {
        let outer = current
        current = value
        codingPath.append(key)
        defer {
            codingPath.removeLast()
            current = outer
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
        if T.self == JSONValue.self { return try decodeJSONValue() as! T }
        if T.self == Data.self || T.self == URL.self || T.self == Decimal.self { throw giveUp() }
        return try T(from: self)
    }

    /// The value being decoded now as it is, where `JSONValue.init(from:)` would try one kind after
    /// another (each miss a thrown error, five for an object) for the same result: when it holds
    /// only integers that fit. A `.double` is left to Foundation, which reads `1.0` as `.int(1)`.
    private func decodeJSONValue() throws -> JSONValue {
        var loneSurrogate = false
        var double = false
        func visit(_ value: JSONValue) {
            switch value {
            case .double: double = true
            case .string(let text): if isLoneSurrogateMarker(text) { loneSurrogate = true }
            case .array(let elements): elements.forEach(visit)
            case .object(let members): members.values.forEach(visit)
            case .null, .bool, .int: break
            }
        }
        visit(current)
        if loneSurrogate { throw refuseLoneSurrogate() }
        if double { throw giveUp() }
        return current
    }

    /// The text of the value being decoded now; nil when it is no string.
    private func text() throws -> String? {
        guard case .string(let text) = current else { return nil }
        if isLoneSurrogateMarker(text) { throw refuseLoneSurrogate() }
        return text
    }

    func decodeString() throws -> String {
        guard let text = try text() else { throw mismatch(String.self) }
        return text
    }

    /// RFC 3339 text, as the date strategy of ``JSONCoding`` reads it; it has the error message.
    func decodeDate() throws -> Date {
        guard let text = try text(), let date = RFC3339.parse(text) else { throw giveUp() }
        return date
    }

    func decodeBool() throws -> Bool {
        guard case .bool(let value) = current else { throw mismatch(Bool.self) }
        return value
    }

    /// Integers that fit; Foundation has rules of its own for `1.0`, `1e2` and overflow.
    func decodeInteger<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        switch current {
        case .int(let value):
            guard let value = I(exactly: value) else { throw giveUp() }
            return value
        case .double: throw giveUp()
        default: throw mismatch(type)
        }
    }

    /// Finite numbers; Foundation has rules of its own for those beyond the range of `Double`.
    func decodeDouble() throws -> Double {
        switch current {
        case .int(let value): return Double(value)
        case .double(let value):
            guard value.isFinite else { throw giveUp() }
            return value
        default: throw mismatch(Double.self)
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = current else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(Keyed<Key>(members: members, decoder: self, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = current else { throw mismatch([Any].self) }
        return Unkeyed(elements: elements, decoder: self, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    // MARK: SingleValueDecodingContainer

    func decodeNil() -> Bool { current.isNull }

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
        let members: [String: JSONValue]
        let decoder: WireDecoder
        let codingPath: [any CodingKey]

        /// Objects with up to this many members are searched one member after another, which costs
        /// less than hashing the name (their keys are mostly small strings, compared at once).
        private static var linearSearchLimit: Int { 16 }

        var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { position(of: key.stringValue) != nil }

        private func position(of name: String) -> Dictionary<String, JSONValue>.Index? {
            guard members.count <= Self.linearSearchLimit else { return members.index(forKey: name) }
            var position = members.startIndex
            while position != members.endIndex {
                if members.keys[position] == name { return position }
                members.formIndex(after: &position)
            }
            return nil
        }

        private func member(_ key: Key) throws -> JSONValue {
            guard let position = position(of: key.stringValue) else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing"))
            }
            return members.values[position]
        }

        func decodeNil(forKey key: Key) throws -> Bool { try member(key).isNull }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try decoder.decode(type, value: member(key), key: key)
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
        let elements: [JSONValue]
        let decoder: WireDecoder
        let codingPath: [any CodingKey]
        private(set) var currentIndex = 0

        init(elements: [JSONValue], decoder: WireDecoder, codingPath: [any CodingKey]) {
            self.elements = elements
            self.decoder = decoder
            self.codingPath = codingPath
        }

        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        /// The next element; the index moves on only once it decoded.
        private func next(_ type: Any.Type) throws -> JSONValue {
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
            let value = try decoder.decode(type, value: next(type), key: Index(currentIndex))
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
