/// Postgres's text form of one-dimensional arrays: `{1,2,3}`, `{"a b","say \"hi\"",NULL}`.
enum ArrayLiteral {
    /// Splits an array literal into its elements (nil for `NULL`) and converts each with `element`,
    /// which returns nil to reject one. Returns nil for anything but a one-dimensional array.
    static func parse<Element>(
        _ text: ArraySlice<UInt8>, element: (ArraySlice<UInt8>?) -> Element?
    ) -> [Element]? {
        var index = text.startIndex
        // Arrays whose lower bound is not 1 are written with a "[0:2]=" prefix.
        if index < text.endIndex, text[index] == UInt8(ascii: "[") {
            guard let equals = text.firstIndex(of: UInt8(ascii: "=")) else { return nil }
            index = equals + 1
        }
        guard index < text.endIndex, text[index] == UInt8(ascii: "{"),
            text[text.endIndex - 1] == UInt8(ascii: "}")
        else { return nil }
        index += 1
        let end = text.endIndex - 1
        var result: [Element] = []
        if index == end { return result }
        while true {
            guard index < end else { return nil }
            let value: Element?
            if text[index] == UInt8(ascii: "\"") {
                guard let (content, next) = quoted(text, from: index + 1, end: end) else {
                    return nil
                }
                value = element(content)
                index = next
            } else {
                var stop = index
                while stop < end, text[stop] != UInt8(ascii: ",") {
                    // A nested array or a stray quote: not something this decoder supports.
                    if text[stop] == UInt8(ascii: "{") || text[stop] == UInt8(ascii: "\"") {
                        return nil
                    }
                    stop += 1
                }
                let token = text[index..<stop]
                value = element(isNull(token) ? nil : token)
                index = stop
            }
            guard let value else { return nil }
            result.append(value)
            if index == end { return result }
            guard text[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }

    /// The content of a quoted element starting after its opening quote, unescaped, and the index
    /// after its closing quote. Only elements with backslashes are copied.
    private static func quoted(
        _ text: ArraySlice<UInt8>, from start: Int, end: Int
    ) -> (ArraySlice<UInt8>, Int)? {
        var index = start
        var unescaped: [UInt8]?
        while index < end {
            switch text[index] {
            case UInt8(ascii: "\""):
                return (unescaped.map { $0[...] } ?? text[start..<index], index + 1)
            case UInt8(ascii: "\\"):
                guard index + 1 < end else { return nil }
                if unescaped == nil { unescaped = Array(text[start..<index]) }
                unescaped!.append(text[index + 1])
                index += 2
            default:
                unescaped?.append(text[index])
                index += 1
            }
        }
        return nil
    }

    private static func isNull(_ token: ArraySlice<UInt8>) -> Bool {
        token.count == 4 && zip(token, "null".utf8).allSatisfy { $0 | 0x20 == $1 }
    }

    /// Appends `{e1,e2}` for integers.
    static func append(_ values: [Int64], to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "{"))
        for (position, value) in values.enumerated() {
            if position > 0 { buffer.append(UInt8(ascii: ",")) }
            buffer.append(contentsOf: String(value).utf8)
        }
        buffer.append(UInt8(ascii: "}"))
    }

    /// Appends `{"e1","e2"}` for strings, every element quoted so that empty strings, `NULL`,
    /// commas, braces and spaces need no special case; quotes and backslashes are escaped.
    /// Returns false if an element contains a NUL byte.
    static func append(_ values: [String], to buffer: inout [UInt8]) -> Bool {
        buffer.append(UInt8(ascii: "{"))
        for (position, value) in values.enumerated() {
            if position > 0 { buffer.append(UInt8(ascii: ",")) }
            buffer.append(UInt8(ascii: "\""))
            for byte in value.utf8 {
                switch byte {
                case 0: return false
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    buffer.append(UInt8(ascii: "\\"))
                    buffer.append(byte)
                default: buffer.append(byte)
                }
            }
            buffer.append(UInt8(ascii: "\""))
        }
        buffer.append(UInt8(ascii: "}"))
        return true
    }
}
