/// An error from the Postgres client: a failed connection, a query the server rejected, a value that
/// could not be sent or decoded, a closed pool.
///
/// `description` is deliberately generic: it names the code and, where there is one, the SQLSTATE and
/// schema identifiers (constraint, table, column), never SQL text, parameter values or the server's
/// message, which can quote a user's data. Those are only in `debugDescription`
/// (`String(reflecting: error)`), for a developer's eyes.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible
{
    /// What kind of failure this is; an extensible set of static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let description: String

        private init(_ description: String) {
            self.description = description
        }

        /// No connection could be opened, or an open one broke (server restarted, network lost).
        public static let connectionFailed = Code("connectionFailed")
        /// The server rejected a statement; `sqlState` says why.
        public static let queryFailed = Code("queryFailed")
        /// The client was shut down.
        public static let poolClosed = Code("poolClosed")
        /// A result value could not be decoded as the requested Swift type.
        public static let decodingFailed = Code("decodingFailed")
        /// A parameter cannot be sent, e.g. text containing a NUL byte, which Postgres text cannot hold.
        public static let encodingFailed = Code("encodingFailed")
        /// No pooled connection became free within the configured wait, or a statement's answer did
        /// not come within its time limit (`unanswered` then says whether the server was silent).
        public static let timeout = Code("timeout")
        /// The configuration is unusable (e.g. a malformed connection URL).
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// Migrations could not be applied, or the database is ahead of this binary.
        public static let migrationFailed = Code("migrationFailed")
    }

    /// The kind of failure.
    public let code: Code
    /// The five-character SQLSTATE the server reported (e.g. `23505`), if any.
    public let sqlState: String?
    /// The constraint a violation concerns, when the server names one.
    public let constraint: String?
    /// The schema of the object the error concerns, when the server names one.
    public let schema: String?
    /// The table the error concerns, when the server names one.
    public let table: String?
    /// The column the error concerns: the server's column for a constraint error, the result column
    /// for a decoding error.
    public let column: String?

    /// A safe explanation written by this library (no values), shown in `description`.
    private let reason: String?
    /// The server's or libpq's own text; may quote data, so only in `debugDescription`.
    private let serverMessage: String?
    private let detail: String?
    private let hint: String?
    /// The connection itself broke while in use (as opposed to failing to open).
    let connectionLost: Bool
    /// The server could not be reached, or sent nothing on the connection for as long as the
    /// statement waited: the client's breaker then leaves it alone for a moment.
    let unanswered: Bool

    init(
        code: Code, reason: String? = nil, sqlState: String? = nil, constraint: String? = nil,
        schema: String? = nil, table: String? = nil, column: String? = nil,
        serverMessage: String? = nil, detail: String? = nil, hint: String? = nil,
        connectionLost: Bool = false, unanswered: Bool = false
    ) {
        self.code = code
        self.reason = reason
        self.sqlState = sqlState
        self.constraint = constraint
        self.schema = schema
        self.table = table
        self.column = column
        self.serverMessage = serverMessage
        self.detail = detail
        self.hint = hint
        self.connectionLost = connectionLost
        self.unanswered = unanswered
    }

    /// A unique constraint was violated (SQLSTATE 23505); `constraint` names it.
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// A foreign key constraint was violated (SQLSTATE 23503); `constraint` names it.
    public var isForeignKeyViolation: Bool { sqlState == "23503" }

    /// A serialization failure (40001) or deadlock (40P01): running the whole transaction again may
    /// succeed. `PostgresClient.transaction` does so by itself.
    public var isRetryableTransactionFailure: Bool { sqlState == "40001" || sqlState == "40P01" }

    /// Whether the server could not be reached or is going away or coming back (connection
    /// failures, timeouts, a closed pool, SQLSTATE classes 08 and 57P: shutting down, starting
    /// up): a caller with another source for what it asked may use that instead.
    public var isUnreachable: Bool {
        switch code {
        case .connectionFailed, .poolClosed, .timeout: true
        default: sqlState.map { $0.hasPrefix("08") || $0.hasPrefix("57P") } ?? false
        }
    }

    public var description: String {
        var parts = ["code: \(code)"]
        if let sqlState { parts.append("sqlState: \(sqlState)") }
        if let constraint { parts.append("constraint: \(constraint)") }
        if let table { parts.append("table: \(table)") }
        if let column { parts.append("column: \(column)") }
        if let reason { parts.append("reason: \(reason)") }
        return "PostgresError(\(parts.joined(separator: ", ")))"
    }

    public var debugDescription: String {
        var parts = [description]
        if let serverMessage { parts.append("message: \(serverMessage)") }
        if let detail { parts.append("detail: \(detail)") }
        if let hint { parts.append("hint: \(hint)") }
        return parts.joined(separator: "; ")
    }
}
