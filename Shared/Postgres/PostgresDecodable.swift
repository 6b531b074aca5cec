import Foundation

/// A Swift type a result value can be decoded as: `try row.decode(Int64.self, at: 0)`.
///
/// Results arrive in Postgres's text format (sessions use ISO dates in UTC and hex `bytea`).
/// `Int16`, `Int32`, `Int64`, `Int`, `String` (any column, as its text), `Bool`, `Double`, `Decimal`
/// (`numeric`), `Date` (`timestamptz`, `timestamp` as UTC, `date`; millisecond precision), `[UInt8]`
/// and `Data` (`bytea`), `UUID`, `[Int64]`, `[String]` and any `Optional` of those (`NULL` is `nil`)
/// conform. A `RawRepresentable` type whose raw value conforms only needs to declare the conformance.
public protocol PostgresDecodable: Sendable {
    /// Creates a value from the text form of a non-NULL result value, or returns nil if the text is
    /// not a value of this type.
    init?(postgresText text: ArraySlice<UInt8>)

    /// What SQL `NULL` decodes to, or nil when this type cannot represent it (the default).
    static var postgresNull: Self? { get }
}

extension PostgresDecodable {
    public static var postgresNull: Self? { nil }
}

extension PostgresDecodable where Self: RawRepresentable, RawValue: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        guard let raw = RawValue(postgresText: text) else { return nil }
        self.init(rawValue: raw)
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        guard let value = Wrapped(postgresText: text) else { return nil }
        self = .some(value)
    }

    public static var postgresNull: Wrapped?? { .some(nil) }
}

extension Int16: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        guard let value = Self.parseDecimal(text) else { return nil }
        self = value
    }
}

extension Int32: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        guard let value = Self.parseDecimal(text) else { return nil }
        self = value
    }
}

extension Int64: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        guard let value = Self.parseDecimal(text) else { return nil }
        self = value
    }
}

extension Int: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        guard let value = Self.parseDecimal(text) else { return nil }
        self = value
    }
}

extension FixedWidthInteger {
    /// Parses an optionally signed run of ASCII digits without allocating; nil on overflow or any
    /// other character.
    static func parseDecimal(_ text: ArraySlice<UInt8>) -> Self? {
        var index = text.startIndex
        let negative = index < text.endIndex && text[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < text.endIndex else { return nil }
        var value: Self = 0
        while index < text.endIndex {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            // Accumulating towards the sign's side lets the minimum value parse.
            let (next, overflow2) =
                negative
                ? shifted.subtractingReportingOverflow(Self(digit))
                : shifted.addingReportingOverflow(Self(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = next
            index += 1
        }
        return value
    }
}

extension String: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        self = String(decoding: text, as: UTF8.self)
    }
}

extension Bool: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        guard text.count == 1 else { return nil }
        switch text[text.startIndex] {
        case UInt8(ascii: "t"): self = true
        case UInt8(ascii: "f"): self = false
        default: return nil
        }
    }
}

extension Double: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        // Postgres writes "NaN", "Infinity" and "-Infinity", all of which Double(String) accepts.
        guard let value = Double(String(decoding: text, as: UTF8.self)) else { return nil }
        self = value
    }
}

extension Decimal: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        let string = String(decoding: text, as: UTF8.self)
        if string == "NaN" {
            self = .nan
            return
        }
        // Decimal(string:) accepts a valid prefix ("1x" is 1), so check the characters first.
        let allowed = text.allSatisfy {
            ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "-")
                || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E")
                || $0 == UInt8(ascii: "+")
        }
        guard allowed, let value = Decimal(string: string, locale: posixLocale) else { return nil }
        self = value
    }
}

extension Date: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        guard let value = PostgresTimestamp.parse(text) else { return nil }
        self = value
    }
}

extension UUID: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        // Postgres writes the canonical lowercase 8-4-4-4-12 form.
        guard text.count == 36 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        var index = text.startIndex
        for byteIndex in 0..<16 {
            if byteIndex == 4 || byteIndex == 6 || byteIndex == 8 || byteIndex == 10 {
                guard text[index] == UInt8(ascii: "-") else { return nil }
                index += 1
            }
            guard let high = hexValue(text[index]), let low = hexValue(text[index + 1]) else {
                return nil
            }
            bytes[byteIndex] = high << 4 | low
            index += 2
        }
        self = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}

extension Data: PostgresDecodable {
    public init?(postgresText text: ArraySlice<UInt8>) {
        guard let bytes = [UInt8](postgresText: text) else { return nil }
        self = Data(bytes)
    }
}

/// Postgres always writes "." as the decimal separator, whatever the process locale.
private let posixLocale = Locale(identifier: "en_US_POSIX")

/// The value of one hexadecimal digit, either case.
func hexValue(_ character: UInt8) -> UInt8? {
    switch character {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
    default: nil
    }
}
