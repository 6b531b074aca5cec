/// Byte-level work on JSON another service already encoded, so that what passes through a service
/// (tweets, in timelines and notifications) is not decoded and encoded again.
public enum JSONSplice {
    /// The byte ranges of the elements of a JSON array (`[a, b, …]`), or nil when `bytes` is not an array.
    public static func elements(of bytes: [UInt8]) -> [Range<Int>]? {
        bytes.withUnsafeBufferPointer { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            var index = 0
            while index < bytes.count, JSONScanner.isSpace(bytes[index]) { index += 1 }
            guard index < bytes.count, bytes[index] == 0x5B else { return nil }
            index += 1
            var ranges: [Range<Int>] = []
            var depth = 0
            var start: Int?
            var inString = false
            // Bytes as hex: backslash 0x5C, quote 0x22, [ 0x5B, { 0x7B, ] 0x5D, } 0x7D, , 0x2C (literals cost a call each in debug builds).
            while index < bytes.count {
                if inString {
                    // Most of a string's bytes are passed over a word at a time.
                    index = JSONScanner.endOfPlainBytes(in: raw, from: index)
                    guard index < bytes.count else { break }
                    if bytes[index] == 0x5C {
                        index += 1
                    } else if bytes[index] == 0x22 {
                        inString = false
                    }
                } else {
                    switch bytes[index] {
                    case 0x22:
                        inString = true
                        if start == nil { start = index }
                    case 0x5B, 0x7B:
                        if start == nil { start = index }
                        depth += 1
                    case 0x5D, 0x7D:
                        if depth == 0 {
                            if let first = start { ranges.append(first..<trimmedEnd(bytes, first, index)) }
                            return ranges
                        }
                        depth -= 1
                    case 0x2C:
                        if depth == 0 {
                            guard let first = start else { return nil }
                            ranges.append(first..<trimmedEnd(bytes, first, index))
                            start = nil
                        }
                    case 0x20, 0x0A, 0x0D, 0x09:
                        break
                    default:
                        if start == nil { start = index }
                    }
                }
                index += 1
            }
            return nil
        }
    }

    private static func trimmedEnd(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Int {
        var end = end
        while end > start, JSONScanner.isSpace(bytes[end - 1]) { end -= 1 }
        return end
    }

    /// The string value of the member `key` of the JSON object `bytes` (top level only); nil when
    /// `bytes` is not a well-formed object or the member is missing or not a string.
    public static func stringMember(_ key: String, of bytes: ArraySlice<UInt8>) -> String? {
        bytes.withUnsafeBytes { buffer in
            var scanner = JSONScanner(buffer)
            var found: String?
            do throws(JSONScanner.Failure) {
                try scanner.object(depth: 0) { name, scanner throws(JSONScanner.Failure) in
                    if found == nil, name == key, scanner.peek() == 0x22 {
                        found = try scanner.string()
                    } else {
                        _ = try scanner.skipValue(depth: 1)
                    }
                }
            } catch {
                return nil
            }
            return found
        }
    }

    /// The members of the JSON object `bytes` (top level), each key with where its value lies; nil
    /// when `bytes` is not a well-formed object.
    public static func members(of bytes: some Collection<UInt8>) -> [(key: String, value: Range<Int>)]? {
        Array(bytes).withUnsafeBytes { buffer in
            var scanner = JSONScanner(buffer)
            var members: [(key: String, value: Range<Int>)] = []
            do throws(JSONScanner.Failure) {
                try scanner.object(depth: 0) { name, scanner throws(JSONScanner.Failure) in
                    members.append((name, try scanner.skipValue(depth: 1)))
                }
                try scanner.expectEnd()
            } catch {
                return nil
            }
            return members
        }
    }

    /// The object `bytes` with its members rewritten by `rewrite` (given each key and value's bytes,
    /// it returns the value's new bytes, or nil to leave the member out), keys kept as they were
    /// read; nil when `bytes` is not a well-formed object.
    public static func rewritingMembers(
        of bytes: [UInt8], _ rewrite: (_ key: String, _ value: ArraySlice<UInt8>) -> [UInt8]?
    ) -> [UInt8]? {
        guard let members = members(of: bytes) else { return nil }
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(bytes.count + 16)
        for (key, range) in members {
            guard let value = rewrite(key, bytes[range]) else { continue }
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            JSONText.appendString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            out += value
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}
