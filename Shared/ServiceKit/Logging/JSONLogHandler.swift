import Logging

/// Writes one JSON object per line:
/// `{"ts":"2026-11-21T22:35:00.123Z","level":"info","service":"auth","msg":"…","trace_id":"…",…}`.
///
/// A `trace_id` metadata value comes right after `msg`; the event's error, if any, is `error`;
/// the other metadata follow sorted by key, keys kept dotted (`"rpc.method"`), arrays and
/// dictionaries as JSON arrays and objects. A metadata key that would repeat a field already
/// written is prefixed with `metadata.`.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    /// The `service` field of every line.
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
        line.append("{\"ts\":\"")
        line.appendTimestamp()
        line.append("\",\"level\":\"")
        line.append(event.level.rawValue)
        line.append("\",\"service\":")
        line.appendJSONString(self.service)
        line.append(",\"msg\":")
        line.appendJSONString(event.message.description)
        if let traceID = metadata["trace_id"] {
            Self.appendField("trace_id", traceID, to: &line)
        }
        if let error = event.error {
            Self.appendField("error", .string(String(describing: error)), to: &line)
        }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where key != "trace_id" {
            let isTaken = Self.fixedFields.contains(key) || (key == "error" && event.error != nil)
            Self.appendField(isTaken ? "metadata.\(key)" : key, value, to: &line)
        }
        line.append("}\n")
        self.output.write(line.bytes)
    }

    /// The fields every line starts with, which metadata keys must not repeat.
    private static let fixedFields = ["ts", "level", "service", "msg"]

    private static func appendField(_ key: String, _ value: Logger.Metadata.Value, to line: inout LogLine) {
        line.append(ascii: ",")
        line.appendJSONString(key)
        line.append(ascii: ":")
        Self.appendValue(value, to: &line)
    }

    private static func appendValue(_ value: Logger.Metadata.Value, to line: inout LogLine) {
        switch value {
        case .string(let string):
            line.appendJSONString(string)
        case .stringConvertible(let convertible):
            line.appendJSONString(convertible.description)
        case .array(let values):
            line.append(ascii: "[")
            for (index, element) in values.enumerated() {
                if index > 0 { line.append(ascii: ",") }
                Self.appendValue(element, to: &line)
            }
            line.append(ascii: "]")
        case .dictionary(let dictionary):
            line.append(ascii: "{")
            for (index, (key, value)) in dictionary.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { line.append(ascii: ",") }
                line.appendJSONString(key)
                line.append(ascii: ":")
                Self.appendValue(value, to: &line)
            }
            line.append(ascii: "}")
        }
    }
}
