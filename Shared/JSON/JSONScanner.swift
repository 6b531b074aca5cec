/// A single forward pass over JSON text that checks it as it goes (RFC 8259 grammar, UTF-8 inside
/// strings, nesting at most ``maximumDepth`` deep) and hands out the byte ranges of the values it
/// passes, so that a reader can pick a few members out of a frame without building a tree of it
/// (or build one, as ``WireDecoder`` does).
package struct JSONScanner {
    package enum Failure: Error {
        case malformed
        case invalidUTF8
        /// Valid JSON, but nested deeper than ``maximumDepth``.
        case tooDeep
    }

    /// Deeper nesting is refused, as Foundation's decoder refuses it, before it can exhaust a stack.
    package static let maximumDepth = 512

    let bytes: UnsafeRawBufferPointer
    package private(set) var index = 0

    package init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// The next byte after white space, without consuming it; nil at the end.
    package mutating func peek() -> UInt8? {
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
        return index < bytes.count ? bytes[index] : nil
    }

    /// Consumes `byte` (after white space) or fails.
    private mutating func expect(_ byte: UInt8) throws(Failure) {
        guard peek() == byte else { throw .malformed }
        index += 1
    }

    /// Fails unless only white space is left.
    package mutating func expectEnd() throws(Failure) {
        guard peek() == nil else { throw .malformed }
    }

    /// Walks the members of the object that starts here, calling `member` with each key; `member`
    /// must consume the value (with ``skipValue(depth:)`` or a reader of its own).
    package mutating func object(
        depth: Int, _ member: (_ key: String, _ scanner: inout JSONScanner) throws(Failure) -> Void
    ) throws(Failure) {
        try objectMembers(depth: depth) { (key, escaped, scanner: inout JSONScanner) throws(Failure) in
            try member(scanner.text(in: key, escaped: escaped), &scanner)
        }
    }

    /// Walks the members of the object that starts here, calling `member` with where each key's
    /// content lies and whether it has escapes; `member` must consume the value.
    mutating func objectMembers(
        depth: Int, _ member: (_ key: Range<Int>, _ escaped: Bool, _ scanner: inout JSONScanner) throws(Failure) -> Void
    ) throws(Failure) {
        guard depth < Self.maximumDepth else { throw .tooDeep }
        try expect(0x7B)  // {
        if peek() == 0x7D {  // }
            index += 1
            return
        }
        while true {
            guard peek() == 0x22 else { throw .malformed }
            let (key, escaped) = try stringRange()
            try expect(0x3A)  // :
            _ = peek()
            try member(key, escaped, &self)
            switch peek() {
            case 0x2C: index += 1  // ,
            case 0x7D: index += 1; return
            default: throw .malformed
            }
        }
    }

    /// Consumes one value of any kind and returns where it lies.
    @discardableResult
    package mutating func skipValue(depth: Int) throws(Failure) -> Range<Int> {
        guard let first = peek() else { throw .malformed }
        let start = index
        switch first {
        case 0x7B:  // {
            try object(depth: depth) { (_, scanner: inout JSONScanner) throws(Failure) in
                try scanner.skipValue(depth: depth + 1)
            }
        case 0x5B:  // [
            try array(depth: depth) { (scanner: inout JSONScanner) throws(Failure) in
                try scanner.skipValue(depth: depth + 1)
            }
        case 0x22: _ = try stringRange()
        case 0x74: try literal("true")
        case 0x66: try literal("false")
        case 0x6E: try literal("null")
        default: _ = try number()
        }
        return start..<index
    }

    /// Walks the elements of the array that starts here, calling `element` for each; `element`
    /// must consume the value.
    mutating func array(depth: Int, _ element: (_ scanner: inout JSONScanner) throws(Failure) -> Void) throws(Failure) {
        guard depth < Self.maximumDepth else { throw .tooDeep }
        try expect(0x5B)  // [
        if peek() == 0x5D {  // ]
            index += 1
            return
        }
        while true {
            try element(&self)
            switch peek() {
            case 0x2C: index += 1  // ,
            case 0x5D: index += 1; return
            default: throw .malformed
            }
        }
    }

    /// One step of the way to a value: a member's key, or an element's index.
    package enum PathStep: Equatable, Sendable {
        case key(String)
        case index(Int)
    }

    /// Consumes the value that starts here and returns the way to the first key given twice in one
    /// of its objects (the object's way, then the key); nil when no object repeats a key. Keys are
    /// compared as Swift's strings are (canonically equivalent), as ``WireTree`` compares them.
    package mutating func keyGivenTwice(depth: Int) throws(Failure) -> [PathStep]? {
        var found: [PathStep]?
        switch peek() {
        case 0x7B:  // {
            var keys = Set<String>()
            try object(depth: depth) { (key, scanner: inout JSONScanner) throws(Failure) in
                guard found == nil, keys.insert(key).inserted else {
                    if found == nil { found = [.key(key)] }
                    try scanner.skipValue(depth: depth + 1)
                    return
                }
                found = try scanner.keyGivenTwice(depth: depth + 1).map { [.key(key)] + $0 }
            }
        case 0x5B:  // [
            var index = 0
            try array(depth: depth) { (scanner: inout JSONScanner) throws(Failure) in
                guard found == nil else {
                    try scanner.skipValue(depth: depth + 1)
                    return
                }
                found = try scanner.keyGivenTwice(depth: depth + 1).map { [.index(index)] + $0 }
                index += 1
            }
        default:
            try skipValue(depth: depth)
        }
        return found
    }

    /// Consumes the array that starts here and the end of the text (a JSON-RPC batch), and returns
    /// where each of its elements lies.
    package mutating func arrayElements() throws(Failure) -> [Range<Int>] {
        var elements: [Range<Int>] = []
        try array(depth: 0) { (scanner: inout JSONScanner) throws(Failure) in
            elements.append(try scanner.skipValue(depth: 1))
        }
        try expectEnd()
        return elements
    }

    /// Reads a string value (with its escapes resolved); an escaped lone surrogate becomes U+FFFD.
    package mutating func string() throws(Failure) -> String {
        let (range, escaped) = try stringRange()
        return text(in: range, escaped: escaped)
    }

    /// The text of the string content at `range` (as ``stringRange()`` gave it), escapes resolved
    /// and a lone surrogate read as U+FFFD.
    func text(in range: Range<Int>, escaped: Bool) -> String {
        let content = UnsafeRawBufferPointer(rebasing: bytes[range])
        guard escaped else { return String(decoding: content, as: UTF8.self) }
        // Not refusing, it has a text for every content.
        return Self.unescape(content, refusingLoneSurrogates: false) ?? "\u{FFFD}"
    }

    /// Reads a number as a ``JSONValue`` holds it: an integer (no fraction, no exponent) that fits
    /// `Int64` as `.int`; any other number, and `-0` (no `Int64` is minus zero), as `.double`, which
    /// is infinite beyond the range of `Double`.
    package mutating func numberValue() throws(Failure) -> JSONValue {
        let (range, isInteger) = try number()
        if isInteger, let value = integer(in: range) { return .int(value) }
        guard let value = Double(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)) else {
            throw .malformed
        }
        return .double(value)
    }

    /// Whether the number at `range` is a zero written without an exponent (`0`, `-0.00`).
    func isPlainZero(_ range: Range<Int>) -> Bool {
        bytes[range].allSatisfy { $0 == 0x30 || $0 == 0x2D || $0 == 0x2E }  // 0 - .
    }

    /// The value of the integer `number()` read at `range`; nil when it does not fit `Int64` or is `-0`.
    private func integer(in range: Range<Int>) -> Int64? {
        let negative = bytes[range.lowerBound] == 0x2D  // -
        // Summed as a negative number, whose range reaches one further (Int64.min).
        var value: Int64 = 0
        for index in (negative ? range.lowerBound + 1 : range.lowerBound)..<range.upperBound {
            let (tens, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowedAgain) = tens.subtractingReportingOverflow(Int64(bytes[index] &- 0x30))
            guard !overflowed, !overflowedAgain else { return nil }
            value = sum
        }
        if negative { return value == 0 ? nil : value }
        return value == .min ? nil : -value
    }

    // MARK: - Lexing

    /// The content of the string that starts here (between its quotes), and whether it has escapes.
    mutating func stringRange() throws(Failure) -> (Range<Int>, escaped: Bool) {
        index += 1  // the opening quote
        let start = index
        var escaped = false
        while index < bytes.count {
            index = Self.endOfPlainBytes(in: bytes, from: index)
            guard index < bytes.count else { break }
            let byte = bytes[index]
            switch byte {
            case 0x22:
                index += 1
                return (start..<(index - 1), escaped)
            case 0x5C:
                escaped = true
                guard index + 1 < bytes.count else { throw .malformed }
                switch bytes[index + 1] {
                case 0x22, 0x5C, 0x2F, 0x62, 0x66, 0x6E, 0x72, 0x74: index += 2
                case 0x75:
                    guard index + 6 <= bytes.count, Self.hex4(bytes, at: index + 2) != nil else { throw .malformed }
                    index += 6
                default: throw .malformed
                }
            case 0..<0x20: throw .malformed
            case 0x80...: try skipUTF8Sequence()
            default: index += 1
            }
        }
        throw .malformed
    }

    /// Where the run of string bytes that need no look (ASCII, not a quote, a backslash or a control
    /// character) that starts at `index` ends, give or take its last seven bytes: it steps eight at a
    /// time, as a base64 upload chunk is megabytes of such bytes.
    static func endOfPlainBytes(in bytes: UnsafeRawBufferPointer, from index: Int) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        /// High bit set in each byte of `word` that is zero (and maybe in bytes after one that is).
        func zeroBytes(_ word: UInt64) -> UInt64 { (word &- ones) & ~word & highs }
        var index = index
        while index + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            let special =
                zeroBytes(word ^ (ones &* 0x22)) | zeroBytes(word ^ (ones &* 0x5C))
                | ((word &- ones &* 0x20) & ~word & highs) | (word & highs)
            guard special == 0 else { return index }
            index += 8
        }
        return index
    }

    /// Checks the multi-byte UTF-8 sequence that starts here (no overlong forms, no surrogates,
    /// nothing above U+10FFFF) and steps over it.
    private mutating func skipUTF8Sequence() throws(Failure) {
        let lead = bytes[index]
        let length: Int
        var second: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; second = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; second = 0x80...0x9F
        case 0xF0: length = 4; second = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; second = 0x80...0x8F
        default: throw .invalidUTF8
        }
        guard index + length <= bytes.count, second.contains(bytes[index + 1]) else { throw .invalidUTF8 }
        for offset in 2..<length where !(0x80...0xBF).contains(bytes[index + offset]) {
            throw .invalidUTF8
        }
        index += length
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, and whether it is an integer.
    private mutating func number() throws(Failure) -> (Range<Int>, isInteger: Bool) {
        let start = index
        if current == 0x2D { index += 1 }  // -
        if current == 0x30 {
            index += 1
        } else {
            guard (0x31...0x39).contains(current) else { throw .malformed }
            skipDigits()
        }
        var isInteger = true
        if current == 0x2E {  // .
            isInteger = false
            index += 1
            guard (0x30...0x39).contains(current) else { throw .malformed }
            skipDigits()
        }
        if current == 0x65 || current == 0x45 {  // e E
            isInteger = false
            index += 1
            if current == 0x2B || current == 0x2D { index += 1 }
            guard (0x30...0x39).contains(current) else { throw .malformed }
            skipDigits()
        }
        return (start..<index, isInteger)
    }

    mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw .malformed }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw .malformed
        }
        index += count
    }

    /// The byte at the cursor, or a byte no rule accepts at the end.
    private var current: UInt8 { index < bytes.count ? bytes[index] : 0 }

    private mutating func skipDigits() {
        while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
    }

    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func hex4(_ bytes: UnsafeRawBufferPointer, at start: Int) -> UInt32? {
        var value: UInt32 = 0
        for offset in 0..<4 {
            let byte = bytes[start + offset]
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x41...0x46: digit = byte - 0x41 + 10
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// Resolves the escapes of a string's content that the lexer already checked; a lone surrogate
    /// becomes U+FFFD, or with `refusingLoneSurrogates` makes the result nil.
    static func unescape(_ content: UnsafeRawBufferPointer, refusingLoneSurrogates: Bool) -> String? {
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        var index = 0
        func flush() {
            scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars)
            utf8.removeAll(keepingCapacity: true)
        }
        while index < content.count {
            let byte = content[index]
            guard byte == 0x5C else {
                utf8.append(byte)
                index += 1
                continue
            }
            let escape = content[index + 1]
            index += 2
            switch escape {
            case 0x62: utf8.append(0x08)
            case 0x66: utf8.append(0x0C)
            case 0x6E: utf8.append(0x0A)
            case 0x72: utf8.append(0x0D)
            case 0x74: utf8.append(0x09)
            case 0x75:
                var code = hex4(content, at: index) ?? 0xFFFD
                index += 4
                if (0xD800..<0xDC00).contains(code), index + 6 <= content.count, content[index] == 0x5C,
                    content[index + 1] == 0x75, let low = hex4(content, at: index + 2), (0xDC00..<0xE000).contains(low)
                {
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                }
                flush()
                guard let scalar = Unicode.Scalar(code) else {
                    if refusingLoneSurrogates { return nil }
                    scalars.append("\u{FFFD}")
                    continue
                }
                scalars.append(scalar)
            default: utf8.append(escape)  // " \ /
            }
        }
        flush()
        return String(scalars)
    }
}
