/// JSON text written in one pass, members in the order they are written: for answers made from
/// typed values field by field (Mastodon's entities), where building a ``JSONValue`` tree first
/// would hash every key only to write the tree out again. Keys are string literals, written as
/// they are (they hold nothing to escape); values are escaped as ``JSONText`` escapes them.
///
/// The writer puts the commas in: a member or an element after another is preceded by one.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    /// Whether a value was written in the container open now, so the next one needs a comma.
    private var needsComma = false

    public init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    /// What was written, as one JSON text (the caller wrote one value).
    public var json: RawJSON { RawJSON(unchecked: bytes) }

    // MARK: Values

    public mutating func string(_ value: String) {
        separate()
        JSONText.appendString(value, to: &bytes)
    }

    public mutating func int(_ value: some BinaryInteger) {
        separate()
        JSONText.appendDecimal(value, to: &bytes)
    }

    public mutating func bool(_ value: Bool) {
        separate()
        append(value ? "true" : "false")
    }

    /// A double, or null where it is not finite (JSON has no such number).
    public mutating func double(_ value: Double) {
        separate()
        if !JSONText.appendDouble(value, to: &bytes) { append("null") }
    }

    public mutating func null() {
        separate()
        append("null")
    }

    /// Text that is already JSON, copied in.
    public mutating func raw(_ value: RawJSON) {
        separate()
        bytes.append(contentsOf: value.bytes)
    }

    /// A tree, as ``JSONValue/jsonBytes`` writes it; null where it holds a double that is not finite.
    public mutating func value(_ value: JSONValue) {
        separate()
        let start = bytes.count
        if !value.write(to: &bytes) {
            bytes.removeSubrange(start...)
            append("null")
        }
    }

    /// An object whose members `members` writes.
    public mutating func object(_ members: (inout JSONWriter) throws -> Void) rethrows {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        try members(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// An array of `elements`, each written by `element`.
    public mutating func array<Elements: Sequence>(
        _ elements: Elements, _ element: (inout JSONWriter, Elements.Element) throws -> Void
    ) rethrows {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        for each in elements { try element(&self, each) }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// An array of texts that are already JSON.
    public mutating func array(_ elements: some Sequence<RawJSON>) {
        array(elements) { writer, element in writer.raw(element) }
    }

    // MARK: Members

    /// The key of the member whose value is written next.
    public mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        append(name)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A member whose value is null.
    public mutating func null(_ name: StaticString) {
        key(name)
        null()
    }

    public mutating func member(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    /// The string, or null.
    public mutating func member(_ name: StaticString, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    public mutating func member(_ name: StaticString, _ value: some BinaryInteger) {
        key(name)
        int(value)
    }

    public mutating func member(_ name: StaticString, _ value: Bool) {
        key(name)
        bool(value)
    }

    public mutating func member(_ name: StaticString, _ value: Double) {
        key(name)
        double(value)
    }

    public mutating func member(_ name: StaticString, _ value: JSONValue) {
        key(name)
        self.value(value)
    }

    public mutating func member(_ name: StaticString, raw value: RawJSON) {
        key(name)
        raw(value)
    }

    public mutating func member(_ name: StaticString, object members: (inout JSONWriter) throws -> Void) rethrows {
        key(name)
        try object(members)
    }

    public mutating func member<Elements: Sequence>(
        _ name: StaticString, array elements: Elements, _ element: (inout JSONWriter, Elements.Element) throws -> Void
    ) rethrows {
        key(name)
        try array(elements, element)
    }

    private mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
    }
}

extension RawJSON {
    /// The one value `write` writes.
    public init(writing write: (inout JSONWriter) throws -> Void) rethrows {
        var writer = JSONWriter()
        try write(&writer)
        self = writer.json
    }

    /// An array of texts that are already JSON.
    public static func array(_ elements: some Sequence<RawJSON>) -> RawJSON {
        RawJSON { $0.array(elements) }
    }

    /// An object whose members `members` writes.
    public static func object(_ members: (inout JSONWriter) throws -> Void) rethrows -> RawJSON {
        try RawJSON { try $0.object(members) }
    }
}
