/// Random access to the bytes being checked, so a parser can jump to a segment or a box without
/// reading a whole video. Implementations block (a file read): call them on a thread pool.
protocol ByteSource {
    /// The number of bytes.
    var size: Int64 { get }
    /// Up to `count` bytes from `offset`; fewer only at the end.
    func read(at offset: Int64, count: Int) throws -> [UInt8]
}

/// A source whose size is read once: a file's size costs a system call, and readers ask for it at
/// every read (``ByteSource/bytes(at:count:)``).
struct SizedSource<Source: ByteSource>: ByteSource {
    let source: Source
    let size: Int64

    init(_ source: Source) {
        self.source = source
        self.size = source.size
    }

    func read(at offset: Int64, count: Int) throws -> [UInt8] {
        try source.read(at: offset, count: count)
    }
}

extension ByteSource {
    /// Exactly `count` bytes from `offset`, or nil when the source ends first.
    func bytes(at offset: Int64, count: Int) throws -> [UInt8]? {
        guard offset >= 0, offset + Int64(count) <= size else { return nil }
        let bytes = try read(at: offset, count: count)
        return bytes.count == count ? bytes : nil
    }
}

extension [UInt8] {
    func bigEndian(at index: Int, width: Int) -> UInt64 {
        var value: UInt64 = 0
        for byte in self[index..<index + width] { value = value << 8 | UInt64(byte) }
        return value
    }

    func littleEndian(at index: Int, width: Int) -> UInt64 {
        var value: UInt64 = 0
        for byte in self[index..<index + width].reversed() { value = value << 8 | UInt64(byte) }
        return value
    }

    func ascii(at index: Int, count: Int) -> String {
        String(decoding: self[index..<index + count], as: UTF8.self)
    }
}
