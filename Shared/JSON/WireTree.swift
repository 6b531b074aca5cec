/// A JSON text read in one pass of ``JSONScanner`` into flat arrays, for ``WireDecoder``: a node
/// per value, each object's members and each array's elements side by side in arrays of their
/// own, and a string's text left in the JSON text until a value asks for it. Nothing in it is
/// counted by reference but the few strings and keys that had escapes or other than ASCII, so
/// reading a page of tweets makes no hash table and no value per member.
struct WireTree {
    enum Node {
        case null
        case bool(Bool)
        case int(Int64)
        case double(Double)
        /// A string without escapes: where its content lies in the text.
        case plain(start: Int32, end: Int32)
        /// A string with escapes, resolved: its place in `texts`.
        case escaped(Int32)
        /// A string that escapes a lone surrogate, which has no text.
        case loneSurrogate
        /// `members[first..<first + count]`; `asciiKeys` when every key is ASCII without escapes.
        case object(first: Int32, count: Int32, asciiKeys: Bool)
        /// `elements[first..<first + count]`.
        case array(first: Int32, count: Int32)
    }

    /// An object's member: its key, and its value's node.
    struct Member {
        /// A key that is ASCII without escapes lies in the text (`keyText` is -1); any other is in
        /// `texts` at `keyText`.
        var keyStart: Int32
        var keyEnd: Int32
        var keyText: Int32
        /// The length, first and last byte of an ASCII key: keys that differ in these differ.
        var fingerprint: UInt32
        var value: Int32
    }

    /// Objects with more members than this are searched through a table of their keys (built as
    /// the object is read, to find a key given twice); smaller ones a member after another.
    static let linearSearchLimit = 32

    let bytes: UnsafeRawBufferPointer
    private(set) var nodes: [Node] = []
    private(set) var members: [Member] = []
    private(set) var elements: [Int32] = []
    private(set) var texts: [String] = []
    /// The key tables of objects of more than ``linearSearchLimit`` members, by their node.
    private(set) var tables: [Int32: [String: Int32]] = [:]
    /// The members and elements of the objects and arrays being read, until each is whole.
    private var pendingMembers: [Member] = []
    private var pendingElements: [Int32] = []

    /// The tree of `bytes` (its root is the last node); nil for text that is not one JSON value,
    /// and where Foundation's decoder must decide: an object with a key twice, a key with U+FFFD
    /// (it may escape a lone surrogate, which Foundation's decoder refuses; found by JSONFuzz), a
    /// zero written with an exponent.
    static func read(_ bytes: UnsafeRawBufferPointer) -> WireTree? {
        guard bytes.count < Int32.max else { return nil }
        var tree = WireTree(bytes: bytes)
        var scanner = JSONScanner(bytes)
        guard (try? scanner.wireNode(depth: 0, into: &tree)) != nil, (try? scanner.expectEnd()) != nil else { return nil }
        return tree
    }

    private init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        nodes.reserveCapacity(bytes.count / 8)
    }

    /// The index of the node of the tree's whole value.
    var root: Int32 { Int32(nodes.count - 1) }

    mutating func append(_ node: Node) -> Int32 {
        nodes.append(node)
        return Int32(nodes.count - 1)
    }

    mutating func appendText(_ text: String) -> Int32 {
        texts.append(text)
        return Int32(texts.count - 1)
    }

    mutating func beginObject() -> Int { pendingMembers.count }
    mutating func add(_ member: Member) { pendingMembers.append(member) }

    /// The object whose members were added since `start`; nil when a key is there twice.
    mutating func endObject(from start: Int, asciiKeys: Bool) -> Int32? {
        let first = Int32(members.count)
        let count = pendingMembers.count - start
        members.append(contentsOf: pendingMembers[start...])
        pendingMembers.removeSubrange(start...)
        let node = append(.object(first: first, count: Int32(count), asciiKeys: asciiKeys))
        let range = Int(first)..<members.count
        if count > Self.linearSearchLimit {
            var table: [String: Int32] = Dictionary(minimumCapacity: count)
            for index in range {
                guard table.updateValue(Int32(index), forKey: key(of: members[index])) == nil else { return nil }
            }
            tables[node] = table
        } else {
            // A bit per key, picked by its fingerprint: only a key whose bit was taken is compared
            // with those before it.
            var taken: UInt64 = 0
            for index in range {
                let bit: UInt64 = 1 << ((members[index].fingerprint &* 0x9E37_79B1) >> 26)
                // Keys other than ASCII are compared as strings, each with every other.
                if taken & bit != 0 || !asciiKeys {
                    for earlier in range.lowerBound..<index where sameKey(members[index], members[earlier], asciiKeys: asciiKeys) {
                        return nil
                    }
                }
                taken |= bit
            }
        }
        return node
    }

    mutating func beginArray() -> Int { pendingElements.count }
    mutating func addElement(_ node: Int32) { pendingElements.append(node) }

    mutating func endArray(from start: Int) -> Int32 {
        let first = Int32(elements.count)
        elements.append(contentsOf: pendingElements[start...])
        pendingElements.removeSubrange(start...)
        return append(.array(first: first, count: Int32(elements.count) - first))
    }

    // MARK: Keys

    /// The text of `member`'s key.
    func key(of member: Member) -> String {
        member.keyText >= 0 ? texts[Int(member.keyText)] : String(decoding: keyBytes(member), as: UTF8.self)
    }

    private func keyBytes(_ member: Member) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[Int(member.keyStart)..<Int(member.keyEnd)])
    }

    /// Equal as Swift's strings are (canonically equivalent), which for ASCII is byte for byte.
    private func sameKey(_ a: Member, _ b: Member, asciiKeys: Bool) -> Bool {
        guard asciiKeys else { return key(of: a) == key(of: b) }
        return a.fingerprint == b.fingerprint && Self.same(keyBytes(a), keyBytes(b))
    }

    /// Byte for byte; keys are short, shorter than a call of `memcmp` is worth.
    private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        for index in 0..<a.count where a[index] != b[index] { return false }
        return true
    }

    static func fingerprint(_ key: UnsafeRawBufferPointer) -> UInt32 {
        guard let first = key.first, let last = key.last else { return 0 }
        return UInt32(truncatingIfNeeded: key.count) << 16 | UInt32(first) << 8 | UInt32(last)
    }

    /// The members of the object at `node`, and whether its keys are all ASCII without escapes;
    /// nil for any other node.
    func object(at node: Int32) -> (members: Range<Int32>, asciiKeys: Bool)? {
        guard case .object(let first, let count, let asciiKeys) = nodes[Int(node)] else { return nil }
        return (first..<first + count, asciiKeys)
    }

    /// The member of the object at `node` whose key is `name`. A small object is searched from
    /// `hint` on, round to it: decoders mostly ask for the members in the order they were written,
    /// so the one after the last found is mostly the one.
    func member(named name: String, inObject node: Int32, hint: Int32) -> Int32? {
        guard let (range, asciiKeys) = object(at: node) else { return nil }
        if range.count > Self.linearSearchLimit { return tables[node]?[name] }
        let (first, end) = (range.lowerBound, range.upperBound)
        let start = range.contains(hint) ? hint : first
        var name = name
        return name.withUTF8 { wanted -> Int32? in
            let wanted = UnsafeRawBufferPointer(wanted)
            // Byte for byte only when both are ASCII: "\u{212A}" (Kelvin) is "K" to Swift. Else as
            // strings (`name` is lent out here, so its text is made again from `wanted`).
            guard asciiKeys, !wanted.contains(where: { $0 >= 0x80 }) else {
                let text = String(decoding: wanted, as: UTF8.self)
                return range.first { key(of: members[Int($0)]) == text }
            }
            let fingerprint = Self.fingerprint(wanted)
            func search(_ indices: Range<Int32>) -> Int32? {
                indices.first { index in
                    let member = members[Int(index)]
                    return member.fingerprint == fingerprint && Self.same(keyBytes(member), wanted)
                }
            }
            return search(start..<end) ?? search(first..<start)
        }
    }

    // MARK: Strings

    /// The text of a string node; nil for any other node (a lone surrogate's is the caller's to refuse).
    func text(_ node: Node) -> String? {
        switch node {
        case .plain(let start, let end): String(decoding: UnsafeRawBufferPointer(rebasing: bytes[Int(start)..<Int(end)]), as: UTF8.self)
        case .escaped(let index): texts[Int(index)]
        default: nil
        }
    }
}

extension JSONScanner {
    /// Reads the value that starts here into `tree` and returns its node; fails where
    /// ``WireTree/read(_:)`` says Foundation's decoder must decide, as for text that is no JSON.
    mutating func wireNode(depth: Int, into tree: inout WireTree) throws(Failure) -> Int32 {
        switch peek() {
        case 0x7B:  // {
            let start = tree.beginObject()
            var asciiKeys = true
            try objectMembers(depth: depth) { (key, escaped, scanner: inout JSONScanner) throws(Failure) in
                let content = UnsafeRawBufferPointer(rebasing: scanner.bytes[key])
                var (keyText, fingerprint): (Int32, UInt32) = (-1, 0)
                if !escaped, content.allSatisfy({ $0 < 0x80 }) {
                    fingerprint = WireTree.fingerprint(content)
                } else {
                    asciiKeys = false
                    let text = scanner.text(in: key, escaped: escaped)
                    // Ends the reading: the text is Foundation's to decide (see `WireTree.read`).
                    guard !text.unicodeScalars.contains("\u{FFFD}") else { throw .malformed }
                    keyText = tree.appendText(text)
                }
                tree.add(WireTree.Member(
                    keyStart: Int32(key.lowerBound), keyEnd: Int32(key.upperBound), keyText: keyText, fingerprint: fingerprint,
                    value: try scanner.wireNode(depth: depth + 1, into: &tree)))
            }
            guard let node = tree.endObject(from: start, asciiKeys: asciiKeys) else { throw .malformed }
            return node
        case 0x5B:  // [
            let start = tree.beginArray()
            try array(depth: depth) { (scanner: inout JSONScanner) throws(Failure) in
                tree.addElement(try scanner.wireNode(depth: depth + 1, into: &tree))
            }
            return tree.endArray(from: start)
        case 0x22:
            let (range, escaped) = try stringRange()
            guard escaped else { return tree.append(.plain(start: Int32(range.lowerBound), end: Int32(range.upperBound))) }
            guard let text = Self.unescape(UnsafeRawBufferPointer(rebasing: bytes[range]), refusingLoneSurrogates: true) else {
                return tree.append(.loneSurrogate)
            }
            return tree.append(.escaped(tree.appendText(text)))
        case 0x74: try literal("true"); return tree.append(.bool(true))
        case 0x66: try literal("false"); return tree.append(.bool(false))
        case 0x6E: try literal("null"); return tree.append(.null)
        case nil: throw .malformed
        default:
            let start = index
            switch try numberValue() {
            case .int(let value): return tree.append(.int(value))
            case .double(let value):
                // Foundation's decoder refuses a number that is not zero but rounds to it (`1e-400`),
                // and some zeros written with an exponent (`0e5`, `0.00e5`; not `0e99` or `0.0e5`),
                // found by JSONFuzz: a zero written so is left to it.
                guard value != 0 || isPlainZero(start..<index) else { throw .malformed }
                return tree.append(.double(value))
            default: throw .malformed
            }
        }
    }
}
