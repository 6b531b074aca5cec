/// One forward-only schema change: SQL (several statements allowed) applied once, in version order.
///
/// The SQL runs inside the migrator's transaction, so it must not contain its own `BEGIN`/`COMMIT`
/// or statements that cannot run in a transaction (`CREATE INDEX CONCURRENTLY`). Services write
/// schema-qualified names (`auth.users`); `search_path` is left alone.
public struct PostgresMigration: Sendable, Hashable {
    /// Positive and unique within a migrator; applied in ascending order.
    public var version: Int
    /// A short description, recorded in `schema_migrations`.
    public var name: String
    public var sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}
