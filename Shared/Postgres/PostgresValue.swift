import Foundation

/// A statement parameter: a value together with the Postgres type it is sent as.
///
/// Most callers pass Swift values directly (`[userID, name]`, see `PostgresEncodable`); the cases
/// are there for what a plain Swift type does not say, such as `.json(text)` (sent as `jsonb`) or a
/// `NULL` of no particular type (`PostgresValue.null`, whose type the server infers from the SQL).
public enum PostgresValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// `smallint`
    case int16(Int16)
    /// `integer`
    case int32(Int32)
    /// `bigint`
    case int64(Int64)
    /// `double precision`
    case double(Double)
    /// `text`; it must not contain a NUL character, which Postgres text cannot hold.
    case text(String)
    /// `bytea`, sent in binary form.
    case bytea([UInt8])
    /// `timestamptz`, with millisecond precision.
    case timestamp(Date)
    case uuid(UUID)
    /// A JSON document, sent as `jsonb`.
    case json(String)
    /// `bigint[]`
    case int64Array([Int64])
    /// `text[]`
    case textArray([String])
}

extension PostgresValue: PostgresEncodable {
    public var postgresValue: PostgresValue { self }
}
