/// How a `PostgresClient` connects and pools.
///
/// Every session the client opens runs with `TimeZone=UTC`, `DateStyle=ISO`, `client_encoding=UTF8`
/// and `bytea_output=hex`, whatever the server's defaults, because row decoding relies on them
/// (through a transaction pooler, see ``Options/transactionPooling``).
public struct PostgresConfiguration: Sendable {
    /// A libpq connection URI, e.g. `postgres://aviary@127.0.0.1:5432/aviary`
    /// (`postgresql://…` and libpq's `key=value` form are accepted too).
    public var url: String

    /// Tuning; each default is documented on its property.
    public var options: Options

    /// Pool and session settings, with defaults suited to one service process.
    public struct Options: Sendable {
        /// The most connections the pool opens (they are opened lazily). Default 8.
        public var poolSize: Int = 8

        /// How long opening one connection may take (libpq `connect_timeout`, whole seconds, at
        /// least 2). Default 10 seconds.
        public var connectTimeout: Duration = .seconds(10)

        /// The longest a statement waits for its answer; past it, the statements in flight on its
        /// connection fail with `.timeout` and the connection is abandoned (the pool opens another), so
        /// a stalled server or network costs its callers this long at most. Migrations are not timed.
        /// `nil` waits for ever. Default 10 seconds.
        public var statementTimeout: Duration? = .seconds(10)

        /// How long the client leaves Postgres alone after it did not answer (a statement that timed
        /// out while the server said nothing, a connection that could not be opened): statements fail
        /// at once with `.connectionFailed`, then one goes through as a probe
        /// (``ChannelSupport/CircuitBreaker``). Default 200 ms.
        public var breakerPause: Duration = .milliseconds(200)

        /// Shown in `pg_stat_activity.application_name`. Default `"aviary"`.
        public var applicationName: String = "aviary"

        /// How long a query waits for a free pooled connection before failing with `.timeout`;
        /// `nil` waits for ever. Default 30 seconds.
        public var poolWaitTimeout: Duration? = .seconds(30)

        /// How many times `transaction` runs its body again after a serialization failure or
        /// deadlock. Default 3 (so at most 4 attempts).
        public var transactionRetryLimit: Int = 3

        /// Prepared statements kept per connection, keyed by SQL text and parameter types; when the
        /// cache is full it is emptied (`DEALLOCATE ALL`) and refilled. `0` disables preparing: every
        /// statement is then parsed anew. Default 256.
        public var preparedStatementCacheSize: Int = 256

        /// The server is reached through a pooler that lends its server connections per
        /// transaction (PgBouncer's transaction mode). Such a pooler keeps no session for a client:
        /// a named prepared statement would be missing on the next server connection, and PgBouncer
        /// refuses the startup packet's `options`. So statements go unnamed (parsed anew each time,
        /// whatever ``preparedStatementCacheSize`` says) and no session settings are sent: the
        /// server's own must suit row decoding (`DateStyle` ISO, `bytea_output` hex, as Postgres's
        /// defaults are; timestamps carry their offset, so any `TimeZone` will do), which each new
        /// connection checks. Pipelined statements and transactions work as without it. Default false.
        public var transactionPooling = false

        /// Prepared statements a connection keeps, as ``transactionPooling`` allows.
        var statementCacheSize: Int { transactionPooling ? 0 : preparedStatementCacheSize }

        /// Threads that read the answers, each watching some of the connections. One suits callers
        /// on event loops: answers that arrive together cost it one wake-up before they hop to
        /// their callers' loops. Tasks that run on the reader threads themselves (see
        /// `PostgresClient.executors`) gain from one per core. Default 1.
        public var readerThreads: Int = 1

        /// The defaults above.
        public init() {}
    }

    /// A configuration for `url` with default options.
    public init(url: String, options: Options = Options()) {
        self.url = url
        self.options = options
    }
}
