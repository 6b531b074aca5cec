import Foundation

/// A `Range: bytes=…` request header (RFC 9110 §14), for one range: `a-b`, `a-` or `-n`.
/// Several ranges are not served as such: the whole file is sent instead, which the RFC allows.
enum ByteRange {
    /// The header selects `range` of the file.
    case satisfiable(ClosedRange<Int64>)
    /// The header selects nothing inside the file: 416.
    case unsatisfiable
    /// No usable single range (absent, malformed, several, another unit): send the whole file.
    case whole

    init(header: String?, size: Int64) {
        guard let header, header.hasPrefix("bytes=") else {
            self = .whole
            return
        }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else {
            self = .whole
            return
        }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        switch (Self.position(first), Self.position(last)) {
        case (let start?, let end?) where start >= 0 && end >= start:
            self = start < size ? .satisfiable(start...min(end, size - 1)) : .unsatisfiable
        case (let start?, nil) where last.isEmpty && start >= 0:
            self = start < size ? .satisfiable(start...(size - 1)) : .unsatisfiable
        case (nil, let suffix?) where first.isEmpty && suffix >= 0:
            self = suffix > 0 && size > 0 ? .satisfiable(max(0, size - suffix)...(size - 1)) : .unsatisfiable
        default:
            self = .whole
        }
    }

    /// A position of the header: decimal digits only (no sign), and one too long for `Int64` is
    /// taken as `Int64.max`, as it lies past the end of any file: a first byte there is
    /// unsatisfiable, a last byte there is the file's last, a suffix that long is the whole file.
    private static func position(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return Int64(text) ?? .max
    }
}
