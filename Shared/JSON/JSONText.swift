/// Writing JSON text by hand, for values small enough that an encoder would cost more than the
/// value itself (a request's method and `_meta`, a pushed notification's method, every log line),
/// into `[UInt8]` or `Data`; ``WireEncoder`` writes its strings with it too.
public enum JSONText {
    /// Appends `string` as a JSON string literal: quotes, backslashes and control characters
    /// escaped; everything else, non-ASCII text included, copied as UTF-8 (Swift strings are always
    /// valid UTF-8).
    public static func appendString<Bytes: RangeReplaceableCollection<UInt8>>(_ string: String, to bytes: inout Bytes) {
        bytes.append(UInt8(ascii: "\""))
        appendEscaped(string, to: &bytes, escapingQuotes: true)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `value` as Foundation writes a double: its shortest description, without a trailing
    /// `.0`. False, with nothing appended, for a value that is not finite (JSON has none).
    public static func appendDouble<Bytes: RangeReplaceableCollection<UInt8>>(_ value: Double, to bytes: inout Bytes) -> Bool {
        guard value.isFinite else { return false }
        let text = value.description
        bytes.append(contentsOf: text.hasSuffix(".0") ? text.utf8.dropLast(2) : text.utf8[...])
        return true
    }

    /// Appends `value`'s decimal digits, at least `digits` of them (zeros first), without making a
    /// string of them.
    public static func appendDecimal(_ value: some BinaryInteger, digits: Int = 1, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let start = bytes.count
        var rest = value.magnitude
        while rest > 0 || bytes.count - start < digits {
            let (quotient, digit) = rest.quotientAndRemainder(dividingBy: 10)
            bytes.append(UInt8(ascii: "0") + UInt8(digit))
            rest = quotient
        }
        bytes[start...].reverse()
    }

    /// Appends `string` with control characters (and DEL) escaped, and with `escapingQuotes` also
    /// `"` and `\`; runs of plain bytes are copied at once.
    public static func appendEscaped<Bytes: RangeReplaceableCollection<UInt8>>(
        _ string: String, to bytes: inout Bytes, escapingQuotes: Bool
    ) {
        var string = string
        string.withUTF8 { utf8 in
            var runStart = 0
            for index in utf8.indices {
                let byte = utf8[index]
                let needsEscape =
                    byte < 0x20 || byte == 0x7F
                    || (escapingQuotes && (byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")))
                guard needsEscape else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
                case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
                case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
                case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
                case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
                default:
                    bytes.append(contentsOf: #"\u00"#.utf8)
                    bytes.append(hexDigits[Int(byte >> 4)])
                    bytes.append(hexDigits[Int(byte & 0xF)])
                }
                runStart = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
