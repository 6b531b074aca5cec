import CLibPQ
import Foundation
import Logging
import Synchronization

/// One libpq connection, lent by `PostgresClient` to one caller at a time (`withConnection`,
/// `transaction`). Its statements never block a thread: libpq runs in non-blocking mode, the caller
/// sends, and the client's `PostgresReactor` resumes it when the answer has arrived.
///
/// `@unchecked Sendable` because it wraps a `PGconn *`, which libpq allows on any thread but not on
/// two at once: the pool lends a connection to one caller at a time, the reactor touches it only
/// while that caller waits for an answer, and `pending`'s lock orders the two. Do not keep a
/// connection beyond the closure it was lent to, and do not run two of its statements at once.
public final class PostgresConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    /// The socket libpq talks over, which the reactor watches.
    let socket: Int32
    private let reactor: PostgresReactor
    private let logger: Logger
    private let statementCacheSize: Int
    /// The statement waiting for its answer, if any.
    private let pending = Mutex<Pending?>(nil)
    /// Prepared statements by SQL text and parameter types, so each is parsed once per connection.
    private var statements: [StatementKey: String] = [:]
    private var statementCounter = 0
    /// Set when the connection is in a state it cannot be used from again (an unsupported COPY).
    private var isUnusable = false
    private let isClosed = Atomic<Bool>(false)

    private struct StatementKey: Hashable {
        let sql: String
        let types: [Oid]
    }

    /// A statement sent and not yet answered in full.
    private struct Pending {
        let continuation: CheckedContinuation<[PostgresResult], any Error>
        var results: [PostgresResult] = []
    }

    private init(
        handle: OpaquePointer, reactor: PostgresReactor, logger: Logger, statementCacheSize: Int
    ) {
        self.handle = handle
        self.socket = PQsocket(handle)
        self.reactor = reactor
        self.logger = logger
        self.statementCacheSize = statementCacheSize
    }

    deinit {
        if !isClosed.load(ordering: .relaxed) { PQfinish(handle) }
    }

    /// Ends the session (libpq sends a Terminate message without waiting) and stops watching the
    /// socket. The pool calls it for connections it discards and at shutdown.
    func close() {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        reactor.unregister(self)
        PQfinish(handle)
    }

    /// Opens a connection; blocks for up to the connect timeout, so callers run it on a thread
    /// pool. The connection then works in non-blocking mode with `reactor`.
    static func connect(
        _ settings: ConnectionSettings, reactor: PostgresReactor, statementCacheSize: Int,
        logger: Logger
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
        guard PQstatus(handle) == CONNECTION_OK, PQsetnonblocking(handle, 1) == 0 else {
            let message = String(cString: PQerrorMessage(handle))
            PQfinish(handle)
            throw PostgresError(
                code: .connectionFailed, reason: "cannot connect to Postgres",
                serverMessage: message)
        }
        let connection = PostgresConnection(
            handle: handle, reactor: reactor, logger: logger,
            statementCacheSize: statementCacheSize)
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
        do {
            try reactor.register(connection)
        } catch {
            connection.isClosed.store(true, ordering: .relaxed)
            PQfinish(handle)
            throw error
        }
        return connection
    }

    /// Runs one statement and returns its rows. Parameters are bound to `$1`, `$2`, … (never
    /// spliced into the SQL); see `PostgresEncodable`.
    public func query(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws
        -> PostgresRows
    {
        try await run(sql, parameters).rows()
    }

    /// Runs one statement and returns how many rows it inserted, updated, deleted or returned.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws
        -> Int
    {
        try await run(sql, parameters).affectedRows
    }

    /// Runs SQL without parameters through the simple protocol, which allows several statements
    /// in one string (migrations) and works in an aborted transaction (`ROLLBACK`).
    func executeScript(_ sql: String) async throws {
        try checkOpen()
        try checkSQL(sql)
        let results = try await roundTrip { PQsendQuery($0, sql) }
        for result in results { _ = try check(result) }
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
        guard !isClosed.load(ordering: .relaxed), !isUnusable, PQstatus(handle) == CONNECTION_OK
        else { return false }
        return PQconsumeInput(handle) == 1 && PQstatus(handle) == CONNECTION_OK
    }

    /// Makes the connection fit for its next user: rolls back a transaction left open. False if it
    /// must be thrown away instead.
    func prepareForReuse() async -> Bool {
        guard !isUnusable, PQstatus(handle) == CONNECTION_OK else { return false }
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE:
            return true
        case PQTRANS_INTRANS, PQTRANS_INERROR:
            logger.debug("rolling back a transaction left open on a pooled connection")
            return (try? await executeScript("ROLLBACK")) != nil
                && PQtransactionStatus(handle) == PQTRANS_IDLE
        default:
            return false
        }
    }

    // MARK: - Waiting for answers

    /// Sends a statement with `send` (a libpq `PQsend…` call) and waits, without blocking, for all
    /// the results it answers with.
    private func roundTrip(_ send: (OpaquePointer) -> Int32) async throws -> [PostgresResult] {
        try await withCheckedThrowingContinuation { continuation in
            // The lock is released before the socket is armed: the reactor, which takes it when the
            // answer comes, then finds it free.
            let next = pending.withLock { pending -> Step in
                guard send(handle) == 1 else {
                    continuation.resume(throwing: error(from: nil))
                    return .finished
                }
                pending = Pending(continuation: continuation)
                return advance(&pending, readSocket: false)
            }
            if case .wait(let writable) = next, !reactor.arm(socket, writable: writable) {
                pending.withLock { finish(&$0, .failure(Self.unwatchable)) }
            }
        }
    }

    /// Called by the reactor when the socket is readable or, while a statement is being sent,
    /// writable.
    func socketIsReady() {
        pending.withLock { pending in
            if case .wait(let writable) = advance(&pending, readSocket: true),
                !reactor.arm(socket, writable: writable)
            {
                finish(&pending, .failure(Self.unwatchable))
            }
        }
    }

    /// What a statement waits for after `advance`.
    private enum Step {
        case finished
        /// The socket to be readable, and writable too when part of the statement is unsent.
        case wait(writable: Bool)
    }

    /// Takes the statement in `pending` as far as it goes without blocking: sends what is left of
    /// it, reads what arrived (with `readSocket`; right after sending there is nothing yet), and
    /// finishes it once its last result is in.
    private func advance(_ pending: inout Pending?, readSocket: Bool) -> Step {
        guard pending != nil else { return .finished }
        let flushed = PQflush(handle)
        guard flushed >= 0, !readSocket || PQconsumeInput(handle) == 1 else {
            finish(&pending, .failure(error(from: nil)))
            return .finished
        }
        while PQisBusy(handle) == 0 {
            guard let pointer = PQgetResult(handle) else {
                let results = pending?.results ?? []
                finish(&pending, .success(results))
                return .finished
            }
            let result = PostgresResult(pointer)
            switch result.status {
            case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
                isUnusable = true
                finish(&pending, .failure(PostgresError(code: .queryFailed, reason: "COPY is not supported")))
                return .finished
            default:
                pending?.results.append(result)
            }
        }
        return .wait(writable: flushed == 1)
    }

    private static let unwatchable = PostgresError(
        code: .connectionFailed, reason: "cannot watch the connection's socket")

    private func finish(_ pending: inout Pending?, _ outcome: Result<[PostgresResult], any Error>) {
        pending.take()?.continuation.resume(with: outcome)
    }

    // MARK: - Running statements

    /// Runs one statement through a cached prepared statement (or unnamed when caching is off)
    /// and returns its successful result.
    private func run(_ sql: String, _ parameters: [any PostgresEncodable]) async throws
        -> PostgresResult
    {
        try checkOpen()
        let bindings = try PostgresBindings(parameters)
        guard statementCacheSize > 0 else {
            try checkSQL(sql)
            return try check(
                await roundTrip { handle in
                    bindings.withParameters { values, lengths, formats in
                        PQsendQueryParams(
                            handle, sql, Int32(bindings.count), bindings.types, values, lengths,
                            formats, 0)
                    }
                })
        }
        let key = StatementKey(sql: sql, types: bindings.types)
        let name = try await preparedStatement(for: key)
        let results = try await roundTrip { handle in
            bindings.withParameters { values, lengths, formats in
                PQsendQueryPrepared(handle, name, Int32(bindings.count), values, lengths, formats, 0)
            }
        }
        guard let first = results.first, first.isStalePlan else { return try check(results) }
        // A table the statement reads changed shape since it was prepared. Forget the statement;
        // run it again at once unless that error has just aborted the caller's transaction.
        statements[key] = nil
        guard PQtransactionStatus(handle) == PQTRANS_IDLE else { return try check(results) }
        logger.debug(
            "re-preparing a statement whose plan went stale",
            metadata: ["db.statement.name": "\(name)"])
        let fresh = try await preparedStatement(for: key)
        return try check(
            await roundTrip { handle in
                bindings.withParameters { values, lengths, formats in
                    PQsendQueryPrepared(
                        handle, fresh, Int32(bindings.count), values, lengths, formats, 0)
                }
            })
    }

    /// The name of the prepared statement for `key`, preparing it on first use.
    private func preparedStatement(for key: StatementKey) async throws -> String {
        if let name = statements[key] { return name }
        if statements.count >= statementCacheSize {
            // Dynamic SQL would otherwise grow the cache without bound.
            try await executeScript("DEALLOCATE ALL")
            statements.removeAll()
        }
        try checkSQL(key.sql)
        statementCounter += 1
        let name = "aviary_\(statementCounter)"
        _ = try check(
            await roundTrip { PQsendPrepare($0, name, key.sql, Int32(key.types.count), key.types) })
        statements[key] = name
        return name
    }

    /// A connection kept past its lending may have been closed by the pool since.
    private func checkOpen() throws {
        guard !isClosed.load(ordering: .relaxed) else {
            throw PostgresError(code: .connectionFailed, reason: "the connection was closed")
        }
    }

    /// Refuses SQL that libpq would mangle: it takes a C string, which a NUL byte cuts short.
    private func checkSQL(_ sql: String) throws {
        guard !sql.utf8.contains(0) else {
            throw PostgresError(code: .encodingFailed, reason: "the SQL text contains a NUL byte")
        }
    }

    /// The one result of a statement, if it succeeded; otherwise the error it carries.
    private func check(_ results: [PostgresResult]) throws -> PostgresResult {
        guard let result = results.first else { throw error(from: nil) }
        return try check(result)
    }

    /// `result` if it is a success; otherwise the error it carries.
    private func check(_ result: PostgresResult) throws -> PostgresResult {
        switch result.status {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return result
        default:
            throw error(from: result)
        }
    }

    /// The error a failed result (or, without one, the connection) reports.
    private func error(from result: PostgresResult?) -> PostgresError {
        func field(_ code: Character) -> String? { result?.errorField(code) }
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
}

/// A libpq result, freed when the last reference goes. Read it through its methods, which keep it
/// alive while they use the pointer.
final class PostgresResult: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// Its rows, copied out.
    func rows() -> PostgresRows {
        PostgresRows(copying: pointer)
    }

    /// How many rows the statement inserted, updated, deleted or returned.
    var affectedRows: Int {
        Int(String(cString: PQcmdTuples(pointer))) ?? 0
    }

    var status: ExecStatusType { PQresultStatus(pointer) }

    /// A field of the error it reports (`C` SQLSTATE, `M` message, `n` constraint, …).
    func errorField(_ code: Character) -> String? {
        PQresultErrorField(pointer, Int32(code.asciiValue!)).map { String(cString: $0) }
    }

    /// Whether it is the error a cached plan gives once its result columns changed.
    var isStalePlan: Bool {
        status == PGRES_FATAL_ERROR && errorField("R") == "RevalidateCachedQuery"
    }

    deinit {
        PQclear(pointer)
    }
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
