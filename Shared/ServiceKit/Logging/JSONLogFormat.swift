import Logging

/// The JSON format (``LogFormat/json``), one JSON object per line:
/// `{"ts":"2026-11-21T22:35:00.123Z","level":"info","service":"auth","msg":"…","trace_id":"…",…}`.
///
/// A `trace_id` metadata value comes right after `msg`; the event's error, if any, is `error`;
/// the other metadata follow sorted by key, keys kept dotted (`"rpc.method"`), arrays and
/// dictionaries as JSON arrays and objects. A metadata key that would repeat a field already
/// written is prefixed with `metadata.`.
extension LogLine {
    mutating func appendJSON(_ event: LogEvent, service: String, metadata: Logger.Metadata) {
        append("{\"ts\":\"")
        appendTimestamp()
        append("\",\"level\":\"")
        append(event.level.rawValue)
        append("\",\"service\":")
        appendJSONString(service)
        append(",\"msg\":")
        appendJSONString(event.message.description)
        if let traceID = metadata["trace_id"] {
            appendField("trace_id", traceID)
        }
        if let error = event.error {
            appendField("error", .string(String(describing: error)))
        }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where key != "trace_id" {
            let isTaken = Self.fixedFields.contains(key) || (key == "error" && event.error != nil)
            appendField(isTaken ? "metadata.\(key)" : key, value)
        }
        append("}\n")
    }

    /// The fields every line starts with, which metadata keys must not repeat.
    private static let fixedFields = ["ts", "level", "service", "msg"]

    private mutating func appendField(_ key: String, _ value: Logger.Metadata.Value) {
        append(ascii: ",")
        appendJSONString(key)
        append(ascii: ":")
        appendValue(value)
    }

    private mutating func appendValue(_ value: Logger.Metadata.Value) {
        switch value {
        case .string(let string):
            appendJSONString(string)
        case .stringConvertible(let convertible):
            appendJSONString(convertible.description)
        case .array(let values):
            append(ascii: "[")
            for (index, element) in values.enumerated() {
                if index > 0 { append(ascii: ",") }
                appendValue(element)
            }
            append(ascii: "]")
        case .dictionary(let dictionary):
            append(ascii: "{")
            for (index, (key, value)) in dictionary.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { append(ascii: ",") }
                appendJSONString(key)
                append(ascii: ":")
                appendValue(value)
            }
            append(ascii: "}")
        }
    }
}
