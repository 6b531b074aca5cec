extension PostgresClient {
    /// Whether `sql` only reads: its first word is SELECT or WITH, no word of it is INSERT, UPDATE,
    /// DELETE or MERGE, and it takes no row locks (FOR SHARE, FOR KEY SHARE; FOR UPDATE and FOR NO
    /// KEY UPDATE have their word). Such a statement's commit waits for no disk flush; the pool
    /// keeps slots for them and lets them share connections with reads only.
    ///
    /// Words are matched without regard to case or quotes: a read of a column named `deleted` is a
    /// read, and one whose string literal holds "delete" counts as a write, which costs it nothing
    /// but the company of reads. A SELECT of a function that writes or waits (`pg_advisory_lock`)
    /// counts as a read: run it with `withConnection` when reads must not wait behind it.
    static func onlyReads(_ sql: String) -> Bool {
        var words = SQLWords(sql)
        guard let first = words.next(), first == .select || first == .with else { return false }
        var previous = first
        while let word = words.next() {
            switch word {
            case .insert, .update, .delete, .merge: return false
            case .share where previous == .for, .key where previous == .for: return false
            default: previous = word
            }
        }
        return true
    }
}

/// The words of SQL text (runs of ASCII letters, digits and `_`), lower-cased, each packed into an
/// integer rather than built as a string: every statement is scanned.
private struct SQLWords: IteratorProtocol {
    /// A word's first 8 bytes, packed little-endian; the ones `onlyReads` looks for are shorter.
    struct Word: Equatable {
        let packed: UInt64

        init(packed: UInt64) { self.packed = packed }

        init(_ keyword: StaticString) {
            var packed: UInt64 = 0
            for (position, byte) in UnsafeBufferPointer(start: keyword.utf8Start, count: keyword.utf8CodeUnitCount).enumerated() {
                packed |= UInt64(byte) << (8 * position)
            }
            self.packed = packed
        }

        static let select = Word("select"), with = Word("with"), insert = Word("insert"), update = Word("update")
        static let delete = Word("delete"), merge = Word("merge"), `for` = Word("for"), share = Word("share")
        static let key = Word("key")
    }

    private let text: String.UTF8View
    private var index: String.UTF8View.Index

    init(_ sql: String) {
        text = sql.utf8
        index = text.startIndex
    }

    mutating func next() -> Word? {
        while index < text.endIndex, !Self.isWordByte(text[index]) { text.formIndex(after: &index) }
        guard index < text.endIndex else { return nil }
        var packed: UInt64 = 0
        var length = 0
        while index < text.endIndex, Self.isWordByte(text[index]) {
            // `| 0x20` lower-cases an ASCII letter and leaves digits alone.
            if length < 8 { packed |= UInt64(text[index] | 0x20) << (8 * length) }
            length += 1
            text.formIndex(after: &index)
        }
        return Word(packed: length <= 8 ? packed : 0)
    }

    private static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
            true
        default: false
        }
    }
}
