import CivilCalendar
import Foundation

/// RFC 3339 UTC times with milliseconds (`2026-11-21T22:35:00.123Z`), the contract's only time format.
/// Hand-rolled because formatters are slow and not safely shared across threads.
public enum RFC3339 {
    public static func format(_ date: Date) -> String {
        let totalMilliseconds = date.millisecondsSince1970
        let milliseconds = Int(((totalMilliseconds % 1000) + 1000) % 1000)
        let seconds = (totalMilliseconds - Int64(milliseconds)) / 1000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilCalendar.date(days: days)
        var text: [UInt8] = []
        text.reserveCapacity(24)
        append(year, width: 4, then: "-", to: &text)
        append(month, width: 2, then: "-", to: &text)
        append(day, width: 2, then: "T", to: &text)
        append(secondOfDay / 3600, width: 2, then: ":", to: &text)
        append(secondOfDay / 60 % 60, width: 2, then: ":", to: &text)
        append(secondOfDay % 60, width: 2, then: ".", to: &text)
        append(milliseconds, width: 3, then: "Z", to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20 else { return nil }
        func number(_ start: Int, _ length: Int) -> Int? {
            guard start + length <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + length] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let year = number(0, 4), bytes[4] == UInt8(ascii: "-"), let month = number(5, 2),
            bytes[7] == UInt8(ascii: "-"), let day = number(8, 2),
            bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t") || bytes[10] == UInt8(ascii: " "),
            let hour = number(11, 2), bytes[13] == UInt8(ascii: ":"), let minute = number(14, 2),
            bytes[16] == UInt8(ascii: ":"), let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == bytes.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, let hours = number(index + 1, 2), bytes[index + 3] == UInt8(ascii: ":"),
                let minutes = number(index + 4, 2)
            else { return nil }
            offsetSeconds = (hours * 3600 + minutes * 60) * (bytes[index] == UInt8(ascii: "+") ? 1 : -1)
        default:
            return nil
        }
        let days = Int(CivilCalendar.days(year: Int64(year), month: Int64(month), day: Int64(day)))
        let seconds = Double(days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds)
        return Date(timeIntervalSince1970: seconds + fraction)
    }

    /// `value`'s digits, at least `width` of them (zeros first), then `separator`.
    private static func append(_ value: some BinaryInteger, width: Int, then separator: Unicode.Scalar, to text: inout [UInt8]) {
        JSONText.appendDecimal(value, digits: width, to: &text)
        text.append(UInt8(ascii: separator))
    }
}

extension Date {
    /// Whole milliseconds since 1970 (rounded down), the unit of ids, scores and expiries in Redis.
    public var millisecondsSince1970: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded(.down))
    }
}
