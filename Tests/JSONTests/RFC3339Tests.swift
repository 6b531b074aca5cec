import AviaryJSON
import Foundation
import Testing

/// The wire's time format, written and read by arithmetic, against Foundation's ISO 8601 formatter.
@Suite struct RFC3339Tests {
    /// Instants from 1583 (Foundation's Gregorian calendar is Julian before October 1582) to 9999,
    /// a little over 114 days apart, each at a different time of day. Their milliseconds (.125) are
    /// exact in binary, so Foundation's rounding and this format's truncation agree.
    private static let instants = stride(from: -12_212_553_600 as Int64, to: 253_402_300_800, by: 9_876_543)
        .map { Date(timeIntervalSince1970: Double($0) + 0.125) }

    @Test func formatsAsFoundationDoes() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        for instant in Self.instants {
            #expect(RFC3339.format(instant) == formatter.string(from: instant), "\(instant.timeIntervalSince1970)")
        }
    }

    @Test func parsesWhatItFormats() {
        for instant in Self.instants {
            #expect(RFC3339.parse(RFC3339.format(instant))?.millisecondsSince1970 == instant.millisecondsSince1970)
        }
        #expect(RFC3339.parse("1970-01-01T00:00:00Z") == Date(timeIntervalSince1970: 0))
        #expect(RFC3339.parse("1970-01-01T01:00:00.250+01:00") == Date(timeIntervalSince1970: 0.25))
        #expect(RFC3339.parse("2024-02-29T23:59:59.999-00:30") == RFC3339.parse("2024-03-01T00:29:59.999Z"))
        for malformed in ["", "2024-13-01T00:00:00Z", "2024-01-01 00:00:00", "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00+0100"] {
            #expect(RFC3339.parse(malformed) == nil, "\(malformed)")
        }
    }
}
