import Logging

/// The text format (``LogFormat/text``), one human-readable line per event:
/// `2026-11-21T22:35:00.123Z info auth: message key=value rpc.method=auth.login error="…"`.
///
/// Metadata follow the message sorted by key; nested dictionaries flatten to dotted keys
/// (`db.pool.size=8`); values with spaces, quotes or control characters are quoted with JSON
/// escapes, and the message's own line breaks are escaped, so every event is exactly one line.
extension LogLine {
    mutating func appendText(_ event: LogEvent, service: String, metadata: Logger.Metadata) {
        appendTimestamp()
        append(ascii: " ")
        append(event.level.rawValue)
        append(ascii: " ")
        append(service)
        append(": ")
        appendTextMessage(event.message.description)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            appendPair(key, value)
        }
        if let error = event.error {
            appendPair("error", .string(String(describing: error)))
        }
        append(ascii: "\n")
    }

    private mutating func appendPair(_ key: String, _ value: Logger.Metadata.Value) {
        switch value {
        case .dictionary(let dictionary):
            for (subkey, subvalue) in dictionary.sorted(by: { $0.key < $1.key }) {
                appendPair("\(key).\(subkey)", subvalue)
            }
        case .string, .stringConvertible, .array:
            append(ascii: " ")
            appendTextMessage(key)
            append(ascii: "=")
            appendTextValue(Self.text(of: value))
        }
    }

    private static func text(of value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let string): string
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): "[" + values.map { Self.text(of: $0) }.joined(separator: ", ") + "]"
        case .dictionary(let dictionary):
            "[" + dictionary.sorted(by: { $0.key < $1.key }).map { "\($0.key): \(Self.text(of: $0.value))" }
                .joined(separator: ", ") + "]"
        }
    }
}
