/// One argument of a Redis command, as the exact bytes sent (commands are binary-safe).
///
/// String and integer literals work directly: `try await client.send(["EXPIRE", key, 60])`.
public struct RedisArgument: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    /// The bytes sent for this argument.
    public var bytes: [UInt8]

    /// Raw bytes, sent unchanged (any value, including empty and non-UTF-8).
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The UTF-8 bytes of `string`.
    public init(_ string: String) {
        self.bytes = Array(string.utf8)
    }

    /// The decimal form of `value`, as Redis expects integers.
    public init(_ value: Int) {
        self.bytes = Array(String(value).utf8)
    }

    /// The decimal form of `value`, as Redis expects integers.
    public init(_ value: Int64) {
        self.bytes = Array(String(value).utf8)
    }

    /// The shortest text that reads back as `value` (`"1.5"`, `"inf"`, `"-inf"`), as Redis expects
    /// scores and floats.
    public init(_ value: Double) {
        self.bytes = Array(value.description.utf8)
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public init(integerLiteral value: Int) {
        self.init(value)
    }

    /// The argument in ASCII upper case, for matching a command's or an option's name (`get` is
    /// `GET`); empty for an argument longer than any name.
    var upperCasedName: String {
        guard bytes.count <= 24 else { return "" }
        return String(decoding: bytes.map { $0 >= 97 && $0 <= 122 ? $0 - 32 : $0 }, as: UTF8.self)
    }
}
