extension Sequence<UInt8> {
    /// The bytes as lowercase hex, two digits each: how digests are named and stored (script
    /// SHA-1s, token digests, key ids, export checksums).
    public var hexEncoded: String {
        var text: [UInt8] = []
        text.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
