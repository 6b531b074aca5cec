import Foundation

/// Decodes JSON off the wire: a request's params, and the result of a call to another service.
/// Foundation's `JSONDecoder` spends most of its time on bookkeeping per value (docs/perf.md,
/// "Choices in the code"), so values are first decoded by `WireDecoder`: one pass of
/// ``JSONScanner`` into a flat ``WireTree``, read through a `Decoder` that keeps no state per value.
///
/// That decoder takes only what it can decode exactly as Foundation's (as ``JSONCoding``
/// configures it) would. Anything else (a failure of any kind, a number that is not an integer
/// within `Int64` where an integer is asked for, …) sends the whole text to Foundation's decoder
/// instead, so what a caller sees, a value or an error message naming the field, is Foundation's
/// in every case but two:
/// - a string that escapes a lone surrogate, which Foundation refuses as "not valid JSON" without
///   saying where, fails with the path of the field that holds it;
/// - text in which an object gives a key twice, which Foundation reads (taking the first), is
///   refused with the key's path: RFC 8259 leaves it to each reader which of the two counts, and
///   readers differ (one that looks for the member it wants may take the last), so that a check
///   made by one reader could be passed by a value another one acts on.
public enum WireDecoding {
    public static func decode<T: Decodable>(_ type: T.Type, from json: Data) throws -> T {
        if let value = try WireDecoder.decode(type, from: json) { return value }
        // The tree is not read for text with a key twice: it is found here, off the common path.
        if let path = keyGivenTwice(in: json) {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: Self.keyGivenTwice))
        }
        return try JSONCoding.decoder().decode(type, from: json)
    }

    /// Why a key given twice is refused.
    public static let keyGivenTwice = "it is given twice in one object; give each key once"

    /// The path of the first key `json` gives twice in one object; nil for none, or for text that
    /// is not JSON.
    static func keyGivenTwice(in json: Data) -> [any CodingKey]? {
        let steps = json.withUnsafeBytes { bytes -> [JSONScanner.PathStep]? in
            var scanner = JSONScanner(bytes)
            guard let steps = try? scanner.keyGivenTwice(depth: 0), (try? scanner.expectEnd()) != nil else { return nil }
            return steps
        }
        return steps?.map { step -> any CodingKey in
            switch step {
            case .key(let key): WireDecoder.Name(key)
            case .index(let index): WireDecoder.Index(index)
            }
        }
    }
}

/// The `Decoder` of ``WireDecoding``: one object for the whole decoding, as Foundation's is,
/// which points at the node being decoded and keeps the path to it as a stack, so a nested value
/// costs no allocation. A value it cannot vouch for sets `gaveUp`, and the caller then ignores
/// whatever the decoding returned or threw: a type's `init(from:)` might catch the failure and go
/// on differently from how it would with Foundation.
///
/// The tree's strings are read out of the JSON text, which lives only while ``decode(_:from:)``
/// runs: a type that keeps the decoder past its `init(from:)` must not use it.
final class WireDecoder: Decoder, SingleValueDecodingContainer {
    /// Thrown for a value this decoder leaves to Foundation; `gaveUp` is set by then.
    struct Unsupported: Error {}

    let tree: WireTree
    /// The node being decoded now. (Its accesses, and the path's, are not checked at run time: only
    /// this class changes them, one call at a time.)
    @exclusivity(unchecked) private(set) var current: Int32
    @exclusivity(unchecked) private(set) var codingPath: [any CodingKey] = []
    /// Where the last member found at each depth was, to look for the next one there (see
    /// ``WireTree/member(named:inObject:hint:)``).
    @exclusivity(unchecked) private var hints: [Int32] = []
    private(set) var gaveUp = false
    /// Thrown for a string that escapes a lone surrogate, with where it is.
    struct LoneSurrogate: Error {
        let codingPath: [any CodingKey]
    }

    /// Whether a string that escapes a lone surrogate was asked for.
    private(set) var refusedLoneSurrogate = false
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private init(tree: WireTree) {
        self.tree = tree
        current = tree.root
        codingPath.reserveCapacity(8)
        hints.reserveCapacity(8)
    }

    /// The value `json` holds, or nil when Foundation's decoder must decide. A string the value
    /// reads that escapes a lone surrogate fails with its path named, where Foundation's decoder
    /// would only say that the text is not valid JSON (one it does not read, Foundation lets be too).
    /// A type that catches that failure and goes on is left to Foundation, whose error it would
    /// have caught instead (as `LenientParams` in WireDecodingTests does; found by JSONFuzz).
    static func decode<T: Decodable>(_ type: T.Type, from json: Data) throws(DecodingError) -> T? {
        let outcome: Result<T, DecodingError>? = json.withUnsafeBytes { bytes in
            guard let tree = WireTree.read(bytes) else { return nil }
            let decoder = WireDecoder(tree: tree)
            let value = Result { try decoder.decodeValue(T.self) }
            guard !decoder.gaveUp else { return nil }
            if decoder.refusedLoneSurrogate {
                guard case .failure(let refusal as LoneSurrogate) = value else { return nil }
                return .failure(DecodingError.dataCorrupted(.init(
                    codingPath: refusal.codingPath,
                    debugDescription: "it escapes a lone surrogate (\\uD800 to \\uDFFF without its pair), which is no character")))
            }
            return (try? value.get()).map { .success($0) }
        }
        return try outcome?.get()
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

    private var node: WireTree.Node { tree.nodes[Int(current)] }

    /// The member named `name` of the object at `node`, a container at `depth`.
    func member(named name: String, inObject node: Int32, depth: Int) -> Int32? {
        while hints.count <= depth { hints.append(-1) }
        let found = tree.member(named: name, inObject: node, hint: hints[depth])
        if let found { hints[depth] = found + 1 }
        return found
    }

    func isNull(_ index: Int32) -> Bool {
        guard case .null = tree.nodes[Int(index)] else { return false }
        return true
    }

    /// Decodes the node `index`, found under `key` in the value being decoded now.
    func decode<T: Decodable>(_ type: T.Type, node index: Int32, key: any CodingKey) throws -> T {
        let outer = current
        current = index
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

    /// The value being decoded now as a ``JSONValue``, where `JSONValue.init(from:)` would try one
    /// kind after another (each miss a thrown error, five for an object) for the same result: when
    /// it holds only integers that fit. A `.double` is left to Foundation, which reads `1.0` as
    /// `.int(1)`.
    private func decodeJSONValue() throws -> JSONValue {
        var loneSurrogate = false
        var double = false
        func visit(_ index: Int32) {
            switch tree.nodes[Int(index)] {
            case .double: double = true
            case .loneSurrogate: loneSurrogate = true
            case .array(let first, let count): tree.elements[Int(first)..<Int(first + count)].forEach(visit)
            case .object(let first, let count, _): tree.members[Int(first)..<Int(first + count)].forEach { visit($0.value) }
            case .null, .bool, .int, .plain, .escaped: break
            }
        }
        visit(current)
        if loneSurrogate { throw refuseLoneSurrogate() }
        if double { throw giveUp() }
        return jsonValue(current)
    }

    /// The node `index` as a ``JSONValue``, once `decodeJSONValue` has found nothing it cannot hold.
    private func jsonValue(_ index: Int32) -> JSONValue {
        let node = tree.nodes[Int(index)]
        switch node {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .int(let value): return .int(value)
        case .double(let value): return .double(value)
        case .plain, .escaped, .loneSurrogate: return .string(tree.text(node) ?? "")
        case .array(let first, let count): return .array(tree.elements[Int(first)..<Int(first + count)].map(jsonValue))
        case .object(let first, let count, _):
            var members: [String: JSONValue] = Dictionary(minimumCapacity: Int(count))
            for member in tree.members[Int(first)..<Int(first + count)] {
                members[tree.key(of: member)] = jsonValue(member.value)
            }
            return .object(members)
        }
    }

    /// The text of the value being decoded now; nil when it is no string.
    private func text() throws -> String? {
        if case .loneSurrogate = node { throw refuseLoneSurrogate() }
        return tree.text(node)
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
        guard case .bool(let value) = node else { throw mismatch(Bool.self) }
        return value
    }

    /// Integers that fit; Foundation has rules of its own for `1.0`, `1e2` and overflow.
    func decodeInteger<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        switch node {
        case .int(let value):
            guard let value = I(exactly: value) else { throw giveUp() }
            return value
        case .double: throw giveUp()
        default: throw mismatch(type)
        }
    }

    /// Finite numbers; Foundation has rules of its own for those beyond the range of `Double`.
    func decodeDouble() throws -> Double {
        switch node {
        case .int(let value): return Double(value)
        case .double(let value):
            guard value.isFinite else { throw giveUp() }
            return value
        default: throw mismatch(Double.self)
        }
    }

    /// The object at node `index`, as a container with `codingPath`.
    func keyed<Key: CodingKey>(_ index: Int32, codingPath: [any CodingKey]) throws -> KeyedDecodingContainer<Key> {
        guard tree.object(at: index) != nil else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(Keyed<Key>(decoder: self, node: index, codingPath: codingPath))
    }

    /// The array at node `index`, as a container with `codingPath`.
    func unkeyed(_ index: Int32, codingPath: [any CodingKey]) throws -> Unkeyed {
        guard case .array(let first, let count) = tree.nodes[Int(index)] else { throw mismatch([Any].self) }
        return Unkeyed(decoder: self, first: first, count: Int(count), codingPath: codingPath)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try keyed(current, codingPath: codingPath)
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { try unkeyed(current, codingPath: codingPath) }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    // MARK: SingleValueDecodingContainer

    func decodeNil() -> Bool { isNull(current) }

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
        let decoder: WireDecoder
        /// The object's node.
        let node: Int32
        let codingPath: [any CodingKey]

        var allKeys: [Key] {
            let tree = decoder.tree
            return (tree.object(at: node)?.members ?? 0..<0).compactMap { Key(stringValue: tree.key(of: tree.members[Int($0)])) }
        }

        func contains(_ key: Key) -> Bool { value(of: key) != nil }

        /// The node of the member `key`.
        private func value(of key: Key) -> Int32? {
            decoder.member(named: key.stringValue, inObject: node, depth: codingPath.count).map { decoder.tree.members[Int($0)].value }
        }

        private func member(_ key: Key) throws -> Int32 {
            guard let value = value(of: key) else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing"))
            }
            return value
        }

        func decodeNil(forKey key: Key) throws -> Bool { decoder.isNull(try member(key)) }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try decoder.decode(type, node: member(key), key: key)
        }

        /// Nil for a member that is absent or null, as Foundation's; the member is looked up once,
        /// where the protocol's own `decodeIfPresent` asks `contains`, then `decodeNil`, then
        /// `decode`. Each of its forms is given, or the protocol's would be taken for it.
        private func present<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
            guard let value = value(of: key), !decoder.isNull(value) else { return nil }
            return try decoder.decode(type, node: value, key: key)
        }

        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(type, key) }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try present(type, key) }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try present(type, key) }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try present(type, key) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(type, key) }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try present(type, key) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try present(type, key) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try present(type, key) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(type, key) }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try present(type, key) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try present(type, key) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try present(type, key) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try present(type, key) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try present(type, key) }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try present(type, key) }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            try decoder.keyed(member(key), codingPath: codingPath + [key])
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try decoder.unkeyed(member(key), codingPath: codingPath + [key])
        }

        func superDecoder() throws -> any Decoder { throw decoder.giveUp() }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw decoder.giveUp() }
    }

    /// An array's elements, in order.
    struct Unkeyed: UnkeyedDecodingContainer {
        let decoder: WireDecoder
        let first: Int32
        let count: Int?
        let codingPath: [any CodingKey]
        private(set) var currentIndex = 0

        init(decoder: WireDecoder, first: Int32, count: Int, codingPath: [any CodingKey]) {
            self.decoder = decoder
            self.first = first
            self.count = count
            self.codingPath = codingPath
        }

        var isAtEnd: Bool { currentIndex >= count ?? 0 }

        /// The next element's node; the index moves on only once it decoded.
        private func next(_ type: Any.Type) throws -> Int32 {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "at end"))
            }
            return decoder.tree.elements[Int(first) + currentIndex]
        }

        mutating func decodeNil() throws -> Bool {
            guard decoder.isNull(try next(Never.self)) else { return false }
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
            let container: KeyedDecodingContainer<NestedKey> = try decoder.keyed(next(type), codingPath: codingPath + [Index(currentIndex)])
            currentIndex += 1
            return container
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let container = try decoder.unkeyed(next([Any].self), codingPath: codingPath + [Index(currentIndex)])
            currentIndex += 1
            return container
        }

        mutating func superDecoder() throws -> any Decoder { throw decoder.giveUp() }
    }

    /// A member's place in a coding path.
    struct Name: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }

        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
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
