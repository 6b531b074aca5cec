import AviaryJSON
import Foundation
import RPC
import Redis

/// One entry of a topic stream as Redis returned it, before it is checked and decoded.
struct StreamEntry {
    struct Field {
        var name: String
        var value: [UInt8]
    }

    /// The entry id, `"1700000000000-0"`.
    var id: String
    /// The field/value pairs; `nil` when the entry was trimmed or deleted while it was pending.
    var fields: [Field]?

    /// When Redis appended the entry: the milliseconds since 1970 at the start of its id.
    var milliseconds: Int64? {
        id.split(separator: "-", maxSplits: 1).first.flatMap { Int64($0) }
    }

    /// Parses `[id, [field, value, …]]` (or `[id, nil]` for a pending entry that no longer exists).
    init(parsing reply: RESPValue) throws {
        guard let parts = reply.array, parts.count == 2, let id = parts[0].string else {
            throw EventStreamFailure("a stream entry is not [id, fields]")
        }
        self.id = id
        if parts[1].isNull {
            fields = nil
            return
        }
        guard let flat = parts[1].array, flat.count.isMultiple(of: 2) else {
            throw EventStreamFailure("the fields of stream entry \(id) are not field/value pairs")
        }
        fields = try stride(from: 0, to: flat.count, by: 2).map { index in
            guard let name = flat[index].string, let value = flat[index + 1].bytes else {
                throw EventStreamFailure("the fields of stream entry \(id) are not strings")
            }
            return Field(name: name, value: value)
        }
    }

    /// The entries of an `XREADGROUP` reply for one stream: `[[key, [entry, …]]]`, or nil when a
    /// blocking read timed out.
    static func entries(ofRead reply: RESPValue) throws -> [StreamEntry] {
        if reply.isNull { return [] }
        guard let streams = reply.array else { throw EventStreamFailure("an XREADGROUP reply is not an array") }
        return try streams.flatMap { stream -> [StreamEntry] in
            guard let parts = stream.array, parts.count == 2, let entries = parts[1].array else {
                throw EventStreamFailure("an XREADGROUP reply is not [[key, entries]]")
            }
            return try entries.map(StreamEntry.init(parsing:))
        }
    }

    func value(of name: String) -> [UInt8]? {
        fields?.first { $0.name == name }?.value
    }

    /// The event the relay wrote, or nil when a field is missing or the payload is not JSON.
    func event(topic: String, deliveries: Int) -> DeliveredEvent? {
        guard let type = value(of: EventStream.Field.type),
            let payloadBytes = value(of: EventStream.Field.payload),
            let payload = try? WireDecoding.decode(JSONValue.self, from: Data(payloadBytes)),
            let outboxBytes = value(of: EventStream.Field.outboxID),
            let outboxID = Int64(String(decoding: outboxBytes, as: UTF8.self)),
            let source = value(of: EventStream.Field.source)
        else { return nil }
        return DeliveredEvent(
            event: DomainEvent(topic: topic, type: String(decoding: type, as: UTF8.self), payload: payload),
            streamID: id, source: String(decoding: source, as: UTF8.self), outboxID: outboxID,
            deliveries: deliveries)
    }
}
