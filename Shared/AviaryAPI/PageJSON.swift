import AviaryJSON

/// A ``Page`` written by hand, `{"items": [...], "nextCursor": "..." | null}` (contract §2), around
/// items that are JSON already: what a service passes through (tweets) is never decoded and encoded
/// again, and long id pages skip `JSONEncoder`. Cursors are base64url and ids digits, so both are
/// written without escaping.
public struct PageJSON {
    private var bytes: [UInt8] = Array(#"{"items":["#.utf8)
    /// How many items are in so far.
    public private(set) var count = 0

    public init() {}

    /// Makes room for about `bytes` more bytes of items, so appending does not reallocate.
    public mutating func reserve(_ bytes: Int) {
        self.bytes.reserveCapacity(self.bytes.count + bytes + 64)
    }

    /// Adds an item that is one JSON value already.
    public mutating func append(_ item: some Collection<UInt8>) {
        separate()
        bytes.append(contentsOf: item)
    }

    /// Adds a string item that needs no escaping (an id).
    public mutating func append(plain string: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: string.utf8)
        bytes.append(UInt8(ascii: "\""))
    }

    /// The finished page; `nextCursor` nil on the last page. Consuming, so the page's bytes are
    /// extended in place rather than copied.
    public consuming func finish(nextCursor: String?) -> RawJSON {
        bytes.append(contentsOf: #"],"nextCursor":"#.utf8)
        if let nextCursor {
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: nextCursor.utf8)
            bytes.append(UInt8(ascii: "\""))
        } else {
            bytes.append(contentsOf: "null".utf8)
        }
        bytes.append(UInt8(ascii: "}"))
        return RawJSON(unchecked: bytes)
    }

    /// The page of `items`, each one JSON value already.
    public static func page(_ items: [RawJSON], nextCursor: String?) -> RawJSON {
        var page = PageJSON()
        page.reserve(items.reduce(0) { $0 + $1.bytes.count + 1 })
        for item in items { page.append(item.bytes) }
        return page.finish(nextCursor: nextCursor)
    }

    private mutating func separate() {
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        count += 1
    }
}
