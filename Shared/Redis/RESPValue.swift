/// A Redis reply (RESP2), copied out of hiredis's reply object so it outlives it.
public enum RESPValue: Sendable, Equatable {
    /// A nil bulk string or nil array (`GET` of a missing key).
    case null
    /// A status reply such as `OK` or `PONG`.
    case simpleString(String)
    /// An error reply, kept whole (`"WRONGTYPE Operation against …"`). `RedisClient.send` throws these
    /// as `RedisError`; `RedisClient.pipeline` returns them in place.
    case error(String)
    /// An integer reply.
    case integer(Int64)
    /// A binary-safe bulk string.
    case bulkString([UInt8])
    /// An array reply; elements may be any value, including nested arrays.
    case array([RESPValue])
}

extension RESPValue {
    /// The text of a simple or bulk string (bulk bytes decoded as UTF-8, invalid sequences repaired);
    /// `nil` for other values.
    public var string: String? {
        switch self {
        case .simpleString(let text): text
        case .bulkString(let bytes): String(decoding: bytes, as: UTF8.self)
        default: nil
        }
    }

    /// An integer reply, or a simple or bulk string holding a decimal integer (`GET` of a counter);
    /// `nil` otherwise.
    public var int: Int? {
        switch self {
        case .integer(let value): Int(exactly: value)
        case .simpleString, .bulkString: string.flatMap { Int($0) }
        default: nil
        }
    }

    /// The bytes of a bulk string, or the UTF-8 bytes of a simple string; `nil` otherwise.
    public var bytes: [UInt8]? {
        switch self {
        case .bulkString(let bytes): bytes
        case .simpleString(let text): Array(text.utf8)
        default: nil
        }
    }

    /// The elements of an array reply; `nil` otherwise.
    public var array: [RESPValue]? {
        if case .array(let elements) = self { elements } else { nil }
    }

    /// A RESP2 map (`CLUSTER SHARDS`, `XINFO`: a flat array of names and values) as a dictionary;
    /// `nil` when the reply is not one.
    public var fields: [String: RESPValue]? {
        guard let items = array, items.count % 2 == 0 else { return nil }
        var fields: [String: RESPValue] = [:]
        for pair in stride(from: 0, to: items.count, by: 2) {
            guard let name = items[pair].string else { return nil }
            fields[name] = items[pair + 1]
        }
        return fields
    }

    /// Whether this is `.null`.
    /// The message of an error reply; nil for any other reply.
    public var errorMessage: String? {
        if case .error(let message) = self { message } else { nil }
    }

    public var isNull: Bool {
        self == .null
    }
}
