import CLibPQ
import Foundation
import Logging

/// One libpq connection, lent by `PostgresClient` to a closure that runs on a pool thread
/// (`withConnection`, `transaction`). Its calls block that thread until the server answers.
///
/// `@unchecked Sendable` because it wraps a `PGconn *`, which libpq allows on any thread but not on
/// two at once: the pool hands a connection to one job at a time, and its lock orders one job's
/// use before the next. Do not keep a connection beyond the closure it was lent to.
public final class PostgresConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private let logger: Logger
    private let statementCacheSize: Int
    /// Prepared statements by SQL text and parameter types, so each is parsed once per connection.
    private var statements: [StatementKey: String] = [:]
    private var statementCounter = 0
    /// Set when the connection is in a state it cannot be used from again (an unsupported COPY).
    private var isUnusable = false
    private var isClosed = false

    private struct StatementKey: Hashable {
        let sql: String
        let types: [Oid]
    }

    private init(handle: OpaquePointer, logger: Logger, statementCacheSize: Int) {
        self.handle = handle
        self.logger = logger
        self.statementCacheSize = statementCacheSize
    }

    deinit {
        close()
    }

    /// Ends the session (libpq sends a Terminate message). Called on a pool thread at shutdown;
    /// otherwise the connection closes when the pool drops it.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        PQfinish(handle)
    }

    /// Opens a connection; blocks for up to the connect timeout.
    static func connect(
        _ settings: ConnectionSettings, statementCacheSize: Int, logger: Logger
    ) throws -> PostgresConnection {
        let handle = withCStrings(settings.keywords) { keywords in
            withCStrings(settings.values) { values in
                PQconnectdbParams(keywords, values, 0)
            }
        }
        guard let handle else {
            throw PostgresError(
                code: .connectionFailed, reason: "libpq could not allocate a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(handle))
            PQfinish(handle)
            throw PostgresError(
                code: .connectionFailed, reason: "cannot connect to Postgres",
                serverMessage: message)
        }
        let connection = PostgresConnection(
            handle: handle, logger: logger, statementCacheSize: statementCacheSize)
        // libpq prints notices ("schema already exists, skipping") on stderr unless told otherwise.
        PQsetNoticeProcessor(
            handle,
            { context, message in
                guard let context, let message else { return }
                let connection = Unmanaged<PostgresConnection>.fromOpaque(context)
                    .takeUnretainedValue()
                connection.logger.debug(
                    "postgres notice",
                    metadata: ["db.notice": "\(String(cString: message).trimmingTrailingNewlines)"])
            }, Unmanaged.passUnretained(connection).toOpaque())
        return connection
    }

    /// Runs one statement and returns its rows. Parameters are bound to `$1`, `$2`, … (never
    /// spliced into the SQL); see `PostgresEncodable`.
    public func query(_ sql: String, _ parameters: [any PostgresEncodable] = []) throws
        -> PostgresRows
    {
        let result = try run(sql, parameters)
        defer { PQclear(result) }
        return PostgresRows(copying: result)
    }

    /// Runs one statement and returns how many rows it inserted, updated, deleted or returned.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [any PostgresEncodable] = []) throws -> Int {
        let result = try run(sql, parameters)
        defer { PQclear(result) }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// Runs SQL without parameters through the simple protocol, which allows several statements
    /// in one string (migrations) and works in an aborted transaction (`ROLLBACK`).
    func executeScript(_ sql: String) throws {
        try checkOpen()
        try checkSQL(sql)
        PQclear(try check(PQexec(handle, sql)))
    }

    /// Whether the connection is in an open transaction (including a failed one).
    var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// Whether the transaction this connection is in has failed, so only `ROLLBACK` is accepted.
    var isInFailedTransaction: Bool { PQtransactionStatus(handle) == PQTRANS_INERROR }

    /// Checks, without blocking, that the server has not closed the connection while it sat idle
    /// (a restart sends a FATAL message and closes the socket, which `PQconsumeInput` reads).
    func isUsable() -> Bool {
        guard !isClosed, !isUnusable, PQstatus(handle) == CONNECTION_OK else { return false }
        return PQconsumeInput(handle) == 1 && PQstatus(handle) == CONNECTION_OK
    }

    /// Makes the connection fit for its next user: rolls back a transaction left open. False if it
    /// must be thrown away instead.
    func prepareForReuse() -> Bool {
        guard !isUnusable, PQstatus(handle) == CONNECTION_OK else { return false }
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE:
            return true
        case PQTRANS_INTRANS, PQTRANS_INERROR:
            logger.debug("rolling back a transaction left open on a pooled connection")
            return (try? executeScript("ROLLBACK")) != nil
                && PQtransactionStatus(handle) == PQTRANS_IDLE
        default:
            return false
        }
    }

    // MARK: - Running statements

    /// Runs one statement through a cached prepared statement (or unnamed when caching is off)
    /// and returns its successful result, which the caller must `PQclear`.
    private func run(_ sql: String, _ parameters: [any PostgresEncodable]) throws -> OpaquePointer {
        try checkOpen()
        let bindings = try PostgresBindings(parameters)
        guard statementCacheSize > 0 else {
            try checkSQL(sql)
            return try check(
                bindings.withParameters { values, lengths, formats in
                    PQexecParams(
                        handle, sql, Int32(bindings.count), bindings.types, values, lengths,
                        formats, 0)
                })
        }
        let key = StatementKey(sql: sql, types: bindings.types)
        let name = try preparedStatement(for: key)
        let result = bindings.withParameters { values, lengths, formats in
            PQexecPrepared(handle, name, Int32(bindings.count), values, lengths, formats, 0)
        }
        guard let result, isStalePlan(result) else { return try check(result) }
        // A table the statement reads changed shape since it was prepared. Forget the statement;
        // run it again at once unless that error has just aborted the caller's transaction.
        statements[key] = nil
        guard PQtransactionStatus(handle) == PQTRANS_IDLE else { return try check(result) }
        PQclear(result)
        logger.debug(
            "re-preparing a statement whose plan went stale",
            metadata: ["db.statement.name": "\(name)"])
        let fresh = try preparedStatement(for: key)
        return try check(
            bindings.withParameters { values, lengths, formats in
                PQexecPrepared(handle, fresh, Int32(bindings.count), values, lengths, formats, 0)
            })
    }

    /// The name of the prepared statement for `key`, preparing it on first use.
    private func preparedStatement(for key: StatementKey) throws -> String {
        if let name = statements[key] { return name }
        if statements.count >= statementCacheSize {
            // Dynamic SQL would otherwise grow the cache without bound.
            try executeScript("DEALLOCATE ALL")
            statements.removeAll()
        }
        try checkSQL(key.sql)
        statementCounter += 1
        let name = "aviary_\(statementCounter)"
        PQclear(try check(PQprepare(handle, name, key.sql, Int32(key.types.count), key.types)))
        statements[key] = name
        return name
    }

    /// A connection kept past its lending may have been closed by the pool since.
    private func checkOpen() throws {
        guard !isClosed else {
            throw PostgresError(code: .connectionFailed, reason: "the connection was closed")
        }
    }

    /// Refuses SQL that libpq would mangle: it takes a C string, which a NUL byte cuts short.
    private func checkSQL(_ sql: String) throws {
        guard !sql.utf8.contains(0) else {
            throw PostgresError(code: .encodingFailed, reason: "the SQL text contains a NUL byte")
        }
    }

    /// Whether `result` is the error a cached plan gives once its result columns changed.
    private func isStalePlan(_ result: OpaquePointer) -> Bool {
        guard PQresultStatus(result) == PGRES_FATAL_ERROR,
            let function = PQresultErrorField(result, Self.diagnosticSourceFunction)
        else { return false }
        return strcmp(function, "RevalidateCachedQuery") == 0
    }

    /// Returns a successful result; otherwise frees it and throws the error it carries.
    private func check(_ result: OpaquePointer?) throws -> OpaquePointer {
        guard let result else { throw error(from: nil) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return result
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            PQclear(result)
            isUnusable = true
            throw PostgresError(code: .queryFailed, reason: "COPY is not supported")
        default:
            defer { PQclear(result) }
            throw error(from: result)
        }
    }

    /// The error a failed result (or, without one, the connection) reports.
    private func error(from result: OpaquePointer?) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let result, let value = PQresultErrorField(result, Int32(code.asciiValue!)) else {
                return nil
            }
            return String(cString: value)
        }
        let sqlState = field("C")
        let lost = PQstatus(handle) != CONNECTION_OK
        // Class 08 is connection exceptions; 57P01-57P03 are the server shutting down or starting.
        let connectionFailure =
            lost
            || sqlState.map { $0.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains($0) }
                ?? false
        let message = field("M") ?? String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines
        if connectionFailure {
            logger.debug(
                "postgres connection failed", metadata: ["db.sqlstate": "\(sqlState ?? "")"])
        }
        return PostgresError(
            code: connectionFailure ? .connectionFailed : .queryFailed,
            reason: connectionFailure ? "the connection to Postgres broke" : nil,
            sqlState: sqlState, constraint: field("n"), schema: field("s"), table: field("t"),
            column: field("c"), serverMessage: message, detail: field("D"), hint: field("H"),
            connectionLost: lost)
    }

    private static let diagnosticSourceFunction = Int32(Character("R").asciiValue!)
}

extension String {
    fileprivate var trimmingTrailingNewlines: String {
        var text = self
        while text.last?.isNewline == true { text.removeLast() }
        return text
    }
}

/// Calls `body` with a NULL-terminated array of C strings, as libpq's keyword arrays expect.
private func withCStrings<Result>(
    _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Result
) -> Result {
    let copies = strings.map { strdup($0) }
    defer {
        for copy in copies { free(copy) }
    }
    let pointers = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
