import Logging

/// Writes one human-readable line per event:
/// `2026-11-21T22:35:00.123Z info auth: message key=value rpc.method=auth.login error="…"`.
///
/// Metadata follow the message sorted by key; nested dictionaries flatten to dotted keys
/// (`db.pool.size=8`); values with spaces, quotes or control characters are quoted with JSON
/// escapes, and the message's own line breaks are escaped, so every event is exactly one line.
public struct TextLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    /// The name after the level on every line.
    public let service: String
    private let output: LogOutput

    public init(
        service: String,
        level: Logger.Level = .info,
        metadataProvider: Logger.MetadataProvider? = nil,
        output: LogOutput = .standardError
    ) {
        self.service = service
        self.logLevel = level
        self.metadataProvider = metadataProvider
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let metadata = LogLine.merge(handler: self.metadata, provider: self.metadataProvider, event: event.metadata)
        var line = LogLine()
        line.appendTimestamp()
        line.append(ascii: " ")
        line.append(event.level.rawValue)
        line.append(ascii: " ")
        line.append(self.service)
        line.append(": ")
        line.appendTextMessage(event.message.description)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            Self.appendPair(key, value, to: &line)
        }
        if let error = event.error {
            Self.appendPair("error", .string(String(describing: error)), to: &line)
        }
        line.append(ascii: "\n")
        self.output.write(line.bytes)
    }

    private static func appendPair(_ key: String, _ value: Logger.Metadata.Value, to line: inout LogLine) {
        switch value {
        case .dictionary(let dictionary):
            for (subkey, subvalue) in dictionary.sorted(by: { $0.key < $1.key }) {
                Self.appendPair("\(key).\(subkey)", subvalue, to: &line)
            }
        case .string, .stringConvertible, .array:
            line.append(ascii: " ")
            line.appendTextMessage(key)
            line.append(ascii: "=")
            line.appendTextValue(Self.text(of: value))
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
