import Foundation

/// Encodes a value as JSON for the wire: every result a handler returns and every params a client
/// sends. Foundation's `JSONEncoder` first builds a tree of boxed values and then writes it out,
/// which was about a tenth of the auth service's CPU under `auth.getUser`; `WireEncoder` writes
/// the text in one pass instead.
///
/// It writes only what it can write with the meaning Foundation's encoder (as ``JSONCoding``
/// configures it) would give. Anything else (a `Float`, `Data`, `URL` or `Decimal`, a double that
/// is not finite, `superEncoder`, a container written to after a later one was started, a value
/// that encodes nothing, any error) sends the value to Foundation's encoder instead, so a caller
/// gets Foundation's result or error in every such case. Members are written in the order they are
/// encoded (Foundation's order is its dictionary's); a key encoded twice in one container, which no
/// synthesized `encode(to:)` does, is written twice.
public enum WireEncoding {
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        if let bytes = WireEncoder.encode(value) { return bytes }
        return Array(try JSONCoding.encoder().encode(value))
    }
}

/// The `Encoder` of ``WireEncoding``: one object for the whole encoding, which appends to one
/// buffer and keeps the containers still open as a stack. A container that is written to closes
/// the ones opened after it (their values are complete); one written to after it was closed makes
/// the encoder give up, as anything else it cannot vouch for does (`gaveUp`), and the caller then
/// ignores whatever was written.
final class WireEncoder: Encoder, SingleValueEncodingContainer {
    /// Thrown for a value this encoder leaves to Foundation; `gaveUp` is set by then.
    struct Unsupported: Error {}

    private(set) var bytes: [UInt8] = []
    private(set) var codingPath: [any CodingKey] = []
    private(set) var gaveUp = false
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// The containers still open, innermost last: an id no other container has, whether it is an
    /// object, and how many members or elements it has so far.
    private var open: [(id: Int, isObject: Bool, count: Int)] = []
    private var lastID = 0
    /// Whether the value being encoded now has been written (a scalar, or a container's opening).
    private var written = false

    private init() {
        bytes.reserveCapacity(256)
        open.reserveCapacity(8)
        codingPath.reserveCapacity(8)
    }

    /// `value` as JSON text, or nil when Foundation's encoder must write it.
    static func encode<T: Encodable>(_ value: T) -> [UInt8]? {
        let encoder = WireEncoder()
        guard (try? encoder.write(value)) != nil, !encoder.gaveUp else { return nil }
        encoder.close(downTo: 0)
        return encoder.bytes
    }

    func giveUp() -> Unsupported {
        gaveUp = true
        return Unsupported()
    }

    /// Writes `value` as the value being encoded now. Foundation writes dates through the
    /// strategy ``JSONCoding`` sets (RFC 3339 text), which is done here too; data, URLs, decimals
    /// and floats it writes in ways of its own, so they are left to it. `RawJSON` is already JSON
    /// text: it is copied in, where Foundation would parse it and write it again.
    func write<T: Encodable>(_ value: T) throws {
        if T.self == String.self {
            JSONText.appendString(unsafeBitCast(value, to: String.self), to: &bytes)
        } else if T.self == Int.self {
            appendInteger(unsafeBitCast(value, to: Int.self))
        } else if T.self == Int64.self {
            appendInteger(unsafeBitCast(value, to: Int64.self))
        } else if T.self == Bool.self {
            appendBool(unsafeBitCast(value, to: Bool.self))
        } else if T.self == Double.self {
            try appendDouble(unsafeBitCast(value, to: Double.self))
        } else if T.self == RawJSON.self {
            bytes.append(contentsOf: unsafeBitCast(value, to: RawJSON.self).bytes)
        } else if T.self == Date.self {
            JSONText.appendString(RFC3339.format(unsafeBitCast(value, to: Date.self)), to: &bytes)
        } else if T.self == Float.self || T.self == Data.self || T.self == URL.self || T.self == Decimal.self {
            throw giveUp()
        } else {
            let depth = open.count
            written = false
            try value.encode(to: self)
            guard written else { throw giveUp() }
            close(downTo: depth)
        }
        written = true
    }

    private func appendInteger<I: FixedWidthInteger>(_ value: I) {
        JSONText.appendDecimal(value, to: &bytes)
    }

    private func appendBool(_ value: Bool) {
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    /// As Foundation writes a double (``JSONText/appendDouble(_:to:)``).
    private func appendDouble(_ value: Double) throws {
        guard JSONText.appendDouble(value, to: &bytes) else { throw giveUp() }
    }

    /// Starts a container as the value being encoded now; its id, or nil when that value was
    /// already written.
    private func start(isObject: Bool) -> Int? {
        guard !written else {
            gaveUp = true
            return nil
        }
        written = true
        lastID += 1
        open.append((lastID, isObject, 0))
        bytes.append(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
        return lastID
    }

    /// Makes room for one more member or element of the open container `id`: closes the containers
    /// opened inside it, and writes the separator.
    func enter(_ id: Int?) throws {
        guard let id, let index = open.lastIndex(where: { $0.id == id }) else { throw giveUp() }
        close(downTo: index + 1)
        if open[index].count > 0 { bytes.append(UInt8(ascii: ",")) }
        open[index].count += 1
    }

    /// Writes `key` and its colon into the open object `id`.
    func enter(_ id: Int?, key: some CodingKey) throws {
        try enter(id)
        JSONText.appendString(key.stringValue, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Writes `value` under `key` (a member's name, or an element's index) in the coding path.
    func write<T: Encodable>(_ value: T, at key: any CodingKey) throws {
        codingPath.append(key)
        defer { codingPath.removeLast() }
        written = false
        try write(value)
    }

    func writeNull() {
        bytes.append(contentsOf: "null".utf8)
    }

    func close(downTo depth: Int) {
        while open.count > depth {
            bytes.append(open.removeLast().isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
        }
    }

    /// Starts a container as the next member or element of an open one, once `enter` has written
    /// its place: its id, or nil (the encoder has given up) when that failed.
    func startNested(isObject: Bool, after enter: () throws -> Void) -> Int? {
        guard (try? enter()) != nil else { return nil }
        written = false
        return start(isObject: isObject)
    }

    func keyed<Key: CodingKey>(_ type: Key.Type, id: Int?, codingPath: [any CodingKey]) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(Keyed<Key>(encoder: self, id: id, codingPath: codingPath))
    }

    // MARK: Encoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        keyed(type, id: start(isObject: true), codingPath: codingPath)
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        Unkeyed(encoder: self, id: start(isObject: false), codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    // MARK: SingleValueEncodingContainer

    /// The one value of a single-value container; a second one is left to Foundation.
    private func single<T: Encodable>(_ value: T) throws {
        guard !written else { throw giveUp() }
        try write(value)
    }

    func encodeNil() throws {
        guard !written else { throw giveUp() }
        writeNull()
        written = true
    }

    func encode(_ value: Bool) throws { try single(value) }
    func encode(_ value: String) throws { try single(value) }
    func encode(_ value: Double) throws { try single(value) }
    func encode(_ value: Float) throws { throw giveUp() }
    func encode(_ value: Int) throws { try single(value) }
    func encode(_ value: Int8) throws { try single(Int(value)) }
    func encode(_ value: Int16) throws { try single(Int(value)) }
    func encode(_ value: Int32) throws { try single(Int(value)) }
    func encode(_ value: Int64) throws { try single(value) }
    func encode(_ value: UInt) throws { try singleUnsigned(value) }
    func encode(_ value: UInt8) throws { try single(Int(value)) }
    func encode(_ value: UInt16) throws { try single(Int(value)) }
    func encode(_ value: UInt32) throws { try single(Int(value)) }
    func encode(_ value: UInt64) throws { try singleUnsigned(value) }
    func encode<T: Encodable>(_ value: T) throws { try single(value) }

    private func singleUnsigned<I: UnsignedInteger & FixedWidthInteger>(_ value: I) throws {
        guard !written else { throw giveUp() }
        appendInteger(value)
        written = true
    }
}

extension WireEncoder {
    /// An object's members. A container the encoder could not start (`id` nil) throws on every use.
    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: WireEncoder
        let id: Int?
        let codingPath: [any CodingKey]

        mutating func encodeNil(forKey key: Key) throws {
            try encoder.enter(id, key: key)
            encoder.writeNull()
        }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try encoder.enter(id, key: key)
            try encoder.write(value, at: key)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
            -> KeyedEncodingContainer<NestedKey>
        {
            let nested = encoder.startNested(isObject: true) { [encoder, id] in try encoder.enter(id, key: key) }
            return encoder.keyed(keyType, id: nested, codingPath: codingPath + [key])
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = encoder.startNested(isObject: false) { [encoder, id] in try encoder.enter(id, key: key) }
            return Unkeyed(encoder: encoder, id: nested, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder {
            _ = encoder.giveUp()
            return encoder
        }

        mutating func superEncoder(forKey key: Key) -> any Encoder {
            _ = encoder.giveUp()
            return encoder
        }
    }

    /// An array's elements, in order.
    struct Unkeyed: UnkeyedEncodingContainer {
        let encoder: WireEncoder
        let id: Int?
        let codingPath: [any CodingKey]
        private(set) var count = 0

        init(encoder: WireEncoder, id: Int?, codingPath: [any CodingKey]) {
            self.encoder = encoder
            self.id = id
            self.codingPath = codingPath
        }

        mutating func encodeNil() throws {
            try encoder.enter(id)
            encoder.writeNull()
            count += 1
        }

        mutating func encode<T: Encodable>(_ value: T) throws {
            try encoder.enter(id)
            try encoder.write(value, at: WireDecoder.Index(count))
            count += 1
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
            -> KeyedEncodingContainer<NestedKey>
        {
            let index = WireDecoder.Index(count)
            count += 1
            let nested = encoder.startNested(isObject: true) { [encoder, id] in try encoder.enter(id) }
            return encoder.keyed(keyType, id: nested, codingPath: codingPath + [index])
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let index = WireDecoder.Index(count)
            count += 1
            let nested = encoder.startNested(isObject: false) { [encoder, id] in try encoder.enter(id) }
            return Unkeyed(encoder: encoder, id: nested, codingPath: codingPath + [index])
        }

        mutating func superEncoder() -> any Encoder {
            _ = encoder.giveUp()
            return encoder
        }
    }
}
