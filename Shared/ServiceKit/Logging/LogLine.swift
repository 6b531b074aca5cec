import AviaryJSON
import Foundation
import Logging

/// The bytes of one log line under construction, with the escaping both formats need.
/// Built by hand rather than with `JSONEncoder` because it runs for every line.
struct LogLine {
    private(set) var bytes: [UInt8] = []

    init() {
        self.bytes.reserveCapacity(256)
    }

    mutating func append(_ string: String) {
        self.bytes.append(contentsOf: string.utf8)
    }

    mutating func append(ascii: Unicode.Scalar) {
        self.bytes.append(UInt8(ascii: ascii))
    }

    /// RFC 3339 UTC with milliseconds, `2026-11-21T22:35:00.123Z`: the contract's one time format.
    mutating func appendTimestamp() {
        self.append(RFC3339.format(Date()))
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped; everything else,
    /// including non-ASCII text, copied as UTF-8 (Swift strings are always valid UTF-8).
    mutating func appendJSONString(_ string: String) {
        JSONText.appendString(string, to: &self.bytes)
    }

    /// A value in the text format: bare when it is one plain word, otherwise a quoted string with
    /// the JSON escapes, so that a line never breaks and `key=value` pairs stay unambiguous.
    mutating func appendTextValue(_ string: String) {
        let needsQuotes =
            string.isEmpty
            || string.utf8.contains { byte in
                byte <= 0x20 || byte == 0x7F || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "=")
                    || byte == UInt8(ascii: "\\")
            }
        if needsQuotes {
            self.appendJSONString(string)
        } else {
            self.append(string)
        }
    }

    /// The free-text message of the text format: unquoted, but control characters escaped so the
    /// line stays one line.
    mutating func appendTextMessage(_ string: String) {
        JSONText.appendEscaped(string, to: &self.bytes, escapingQuotes: false)
    }
}

extension LogLine {
    /// The metadata of one event: the handler's, then the provider's, then the call's, later
    /// sources winning, as swift-log's own handlers merge them.
    static func merge(
        handler: Logger.Metadata, provider: Logger.MetadataProvider?, event: Logger.Metadata?
    ) -> Logger.Metadata {
        let provided = provider?.get() ?? [:]
        guard !provided.isEmpty || !(event?.isEmpty ?? true) else { return handler }
        var merged = handler
        merged.merge(provided) { _, new in new }
        if let event { merged.merge(event) { _, new in new } }
        return merged
    }
}
