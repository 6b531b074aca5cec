import Foundation

/// A Swift value that can be passed directly as a statement parameter:
/// `try await client.query("SELECT … WHERE id = $1 AND name = $2", [userID, name])`.
///
/// `Bool`, `Int16`, `Int32`, `Int64`, `Int` (as `bigint`), `Double`, `String`, `Date`
/// (`timestamptz`), `UUID`, `Data` and `[UInt8]` (`bytea`), `[Int64]`, `[String]`, any `Optional` of
/// those (`nil` is `NULL`) and `PostgresValue` itself conform. A `RawRepresentable` type whose raw
/// value conforms only needs to declare the conformance.
///
/// Each parameter is sent with its type (a `String` as `text`), so SQL that needs another type
/// says so: `$1::inet`, `$1::my_enum`. A bare `nil` cannot go in the array: pass an optional
/// variable or `PostgresValue.null`. An array is one parameter: `WHERE id = ANY($1)` takes `[ids]`.
public protocol PostgresEncodable: Sendable {
    /// The parameter this value is sent as.
    var postgresValue: PostgresValue { get }
}

extension PostgresEncodable where Self: RawRepresentable, RawValue: PostgresEncodable {
    public var postgresValue: PostgresValue { rawValue.postgresValue }
}

extension Bool: PostgresEncodable {
    public var postgresValue: PostgresValue { .bool(self) }
}

extension Int16: PostgresEncodable {
    public var postgresValue: PostgresValue { .int16(self) }
}

extension Int32: PostgresEncodable {
    public var postgresValue: PostgresValue { .int32(self) }
}

extension Int64: PostgresEncodable {
    public var postgresValue: PostgresValue { .int64(self) }
}

extension Int: PostgresEncodable {
    public var postgresValue: PostgresValue { .int64(Int64(self)) }
}

extension Double: PostgresEncodable {
    public var postgresValue: PostgresValue { .double(self) }
}

extension String: PostgresEncodable {
    public var postgresValue: PostgresValue { .text(self) }
}

extension Date: PostgresEncodable {
    public var postgresValue: PostgresValue { .timestamp(self) }
}

extension UUID: PostgresEncodable {
    public var postgresValue: PostgresValue { .uuid(self) }
}

extension Data: PostgresEncodable {
    public var postgresValue: PostgresValue { .bytea([UInt8](self)) }
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public var postgresValue: PostgresValue { self?.postgresValue ?? .null }
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    public var postgresValue: PostgresValue { Element.postgresValue(forArray: self) }
}
