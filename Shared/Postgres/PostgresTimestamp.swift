import CivilCalendar
import Foundation

/// Timestamps in the text form sessions use (`DateStyle=ISO`, `TimeZone=UTC`), converted by
/// arithmetic rather than a date formatter: `2024-05-06 07:08:09.123456+00`, millisecond precision.
enum PostgresTimestamp {
    private static let millisecondsPerDay: Int64 = 86_400_000

    /// Parses `timestamptz` (any offset), `timestamp` (taken as UTC) and `date` values, with an
    /// optional ` BC` suffix, plus `infinity` and `-infinity` (the distant future and past).
    /// Digits beyond milliseconds are dropped.
    static func parse(_ text: ArraySlice<UInt8>) -> Date? {
        if text.elementsEqual("infinity".utf8) { return .distantFuture }
        if text.elementsEqual("-infinity".utf8) { return .distantPast }
        var scanner = Scanner(text: text)
        guard var year = scanner.number(maxDigits: 9), scanner.skip("-"),
            let month = scanner.number(digits: 2), scanner.skip("-"),
            let day = scanner.number(digits: 2), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var milliseconds: Int64 = 0
        if scanner.skip(" ") || scanner.skip("T") {
            guard let hour = scanner.number(digits: 2), scanner.skip(":"),
                let minute = scanner.number(digits: 2), scanner.skip(":"),
                let second = scanner.number(digits: 2), hour <= 24, minute < 60, second < 61
            else { return nil }
            milliseconds = ((hour * 60 + minute) * 60 + second) * 1000
            if scanner.skip(".") {
                var scale: Int64 = 100
                guard scanner.hasDigit else { return nil }
                while let digit = scanner.digit() {
                    milliseconds += digit * scale
                    scale /= 10
                }
            }
            if let sign = scanner.sign() {
                guard let hours = scanner.number(digits: 2) else { return nil }
                var offset = hours * 3600
                if scanner.skip(":") {
                    guard let minutes = scanner.number(digits: 2) else { return nil }
                    offset += minutes * 60
                    if scanner.skip(":") {
                        guard let seconds = scanner.number(digits: 2) else { return nil }
                        offset += seconds
                    }
                }
                milliseconds -= sign * offset * 1000
            }
        }
        if scanner.skip(" BC") {
            year = 1 - year
        }
        guard scanner.atEnd else { return nil }
        let total =
            CivilCalendar.days(year: year, month: month, day: day) * millisecondsPerDay + milliseconds
        return Date(timeIntervalSince1970: Double(total) / 1000)
    }

    /// Appends `YYYY-MM-DD HH:MM:SS.mmm+00` (with ` BC` before year 1); false if the date is
    /// outside what Postgres can store.
    static func append(_ date: Date, to buffer: inout [UInt8]) -> Bool {
        let seconds = date.timeIntervalSince1970
        // Postgres timestamps end in the year 294276; this bound also keeps the Int64 math exact.
        guard seconds.isFinite, abs(seconds) < 9_000_000_000_000 else { return false }
        let total = Int64((seconds * 1000).rounded())
        var days = total / millisecondsPerDay
        var milliseconds = total % millisecondsPerDay
        if milliseconds < 0 {
            days -= 1
            milliseconds += millisecondsPerDay
        }
        let (year, month, day) = CivilCalendar.date(days: days)
        appendNumber(year > 0 ? year : 1 - year, width: 4, to: &buffer)
        buffer.append(UInt8(ascii: "-"))
        appendNumber(month, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: "-"))
        appendNumber(day, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: " "))
        appendNumber(milliseconds / 3_600_000, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: ":"))
        appendNumber(milliseconds / 60_000 % 60, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: ":"))
        appendNumber(milliseconds / 1000 % 60, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: "."))
        appendNumber(milliseconds % 1000, width: 3, to: &buffer)
        buffer.append(contentsOf: "+00".utf8)
        if year <= 0 { buffer.append(contentsOf: " BC".utf8) }
        return true
    }

    private static func appendNumber(_ value: Int64, width: Int, to buffer: inout [UInt8]) {
        let digits = String(value).utf8
        if digits.count < width {
            buffer.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digits.count))
        }
        buffer.append(contentsOf: digits)
    }

    /// A cursor over ASCII text.
    private struct Scanner {
        let text: ArraySlice<UInt8>
        var index: Int

        init(text: ArraySlice<UInt8>) {
            self.text = text
            self.index = text.startIndex
        }

        var atEnd: Bool { index == text.endIndex }

        var hasDigit: Bool {
            index < text.endIndex && text[index] &- UInt8(ascii: "0") < 10
        }

        mutating func digit() -> Int64? {
            guard hasDigit else { return nil }
            defer { index += 1 }
            return Int64(text[index] - UInt8(ascii: "0"))
        }

        /// Exactly `digits` digits.
        mutating func number(digits: Int) -> Int64? {
            var value: Int64 = 0
            for _ in 0..<digits {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        /// One to `maxDigits` digits.
        mutating func number(maxDigits: Int) -> Int64? {
            guard hasDigit else { return nil }
            var value: Int64 = 0
            var count = 0
            while count < maxDigits, let digit = digit() {
                value = value * 10 + digit
                count += 1
            }
            return value
        }

        /// +1 or -1 after consuming a sign, nil if there is none.
        mutating func sign() -> Int64? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }

        mutating func skip(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard text.endIndex - index >= count else { return false }
            let matches = literal.withUTF8Buffer { literalBytes in
                literalBytes.elementsEqual(text[index..<index + count])
            }
            if matches { index += count }
            return matches
        }
    }
}
