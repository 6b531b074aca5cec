import CLibPQ

/// The built-in type OIDs (`pg_type.oid`) parameters are sent as; stable across Postgres versions.
enum PostgresTypeOID {
    static let unknown: Oid = 0
    static let bool: Oid = 16
    static let bytea: Oid = 17
    static let int8: Oid = 20
    static let int2: Oid = 21
    static let int4: Oid = 23
    static let text: Oid = 25
    static let float8: Oid = 701
    static let textArray: Oid = 1009
    static let int8Array: Oid = 1016
    static let timestamptz: Oid = 1184
    static let uuid: Oid = 2950
    static let jsonb: Oid = 3802
}
