import CLibPQ
import Foundation
import Locking
import Logging
import Metrics
import NIOCore
import Synchronization

/// One libpq connection. `PostgresClient` lends it whole to one caller (`withConnection`,
/// `transaction`), or shares it among the single statements of several callers in one event-loop
/// tick, which then leave in one batch (libpq pipeline mode: each statement ends with its own sync,
/// so each runs in its own implicit transaction and a failure stays its own). Its statements never
/// block a thread: libpq runs in non-blocking mode, the caller sends, and the client's
/// `PostgresReactor` resumes it when the answer has arrived.
///
/// `@unchecked Sendable` because it wraps a `PGconn *`, which libpq allows on any thread but not on
/// two at once: every use of the handle, the callers' sends and the reactor's reads, happens under
/// `state`'s lock. Do not keep a connection beyond the closure it was lent to.
public final class PostgresConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    /// The socket libpq talks over, which the reactor watches.
    let socket: Int32
    /// The reactor that reads its answers.
    let reactor: PostgresReactor
    private let logger: Logger
    private let statementCacheSize: Int
    /// How long the oldest statement in flight may wait before the connection is abandoned.
    private let statementTimeout: Duration?
    /// Every statement and script sent, by every connection of the process: with the calls served,
    /// the statements a call costs.
    private static let sent = Counter(label: "aviary_postgres_statements_total")
    /// The statements sent and not yet answered, and the prepared-statement cache; the lock also
    /// orders every use of `handle`.
    private let state = Locked(State())
    private let isClosed = Atomic<Bool>(false)

    private struct State {
        /// Oldest first: answers arrive in the order the statements were sent.
        var inFlight = CircularBuffer<Pending>(initialCapacity: 4)
        /// The results of the oldest statement in flight so far (kept here, not in its `Pending`:
        /// `CircularBuffer`'s subscript would copy the array at each append).
        var oldestResults: [PostgresResult] = []
        /// Prepared statements by SQL text and parameter types, so each is parsed once per
        /// connection; a name is taken when its `Parse` is sent, so statements sent behind it use it.
        var statements: [StatementKey: String] = [:]
        var statementCounter = 0
        /// Set when the connection is in a state it cannot be used from again (an unsupported COPY,
        /// a statement only partly queued).
        var isUnusable = false
        /// The `BEGIN` of a transaction not yet sent: it leaves with the transaction's first
        /// statement, which saves the transaction a round trip.
        var deferredBegin: String?
        /// Whether the reactor watches the socket for being writable, which it does only while
        /// part of a statement is unsent (a writable socket would wake it all the time).
        var watchesWritable = false
    }

    private struct StatementKey: Hashable {
        let sql: String
        let types: [Oid]
    }

    /// A statement sent and not yet answered in full.
    private struct Pending {
        /// Nil once its caller stopped waiting (``PostgresClient/waiting(atMost:_:)``): its results
        /// are then read and dropped, so that those behind it stay in step.
        var continuation: CheckedContinuation<[PostgresResult], any Error>?
        /// A statement sent in pipeline mode, whose results end with its sync; otherwise a script,
        /// whose results end where libpq returns no further result.
        let endsWithSync: Bool
        let sent: ContinuousClock.Instant
        /// When the connection is abandoned if this statement is still the oldest unanswered.
        let abandonAt: ContinuousClock.Instant?
        /// When its caller stops waiting for it.
        let waitUntil: ContinuousClock.Instant?
    }

    /// A caller to resume, with what it gets; resumed outside the lock.
    private typealias Completion = (CheckedContinuation<[PostgresResult], any Error>, Result<[PostgresResult], any Error>)

    private init(
        handle: OpaquePointer, reactor: PostgresReactor, logger: Logger, statementCacheSize: Int,
        statementTimeout: Duration?
    ) {
        self.handle = handle
        self.socket = PQsocket(handle)
        self.reactor = reactor
        self.logger = logger
        self.statementCacheSize = statementCacheSize
        self.statementTimeout = statementTimeout
    }

    deinit {
        if !isClosed.load(ordering: .relaxed) { PQfinish(handle) }
    }

    /// Ends the session (libpq sends a Terminate message without waiting) and stops watching the
    /// socket. The pool calls it for connections it discards and at shutdown, when none of its
    /// statements is in flight.
    func close() {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        reactor.unregister(self)
        // Under the lock: the reactor's thread may have taken this connection from its table just
        // before, and `socketIsReady` looks at `isClosed` under the same lock before touching the handle.
        state.withLock { _ in PQfinish(handle) }
    }

    /// Opens a connection; blocks for up to the connect timeout, so callers run it on a thread
    /// pool. The connection then works in non-blocking mode with `reactor`.
    static func connect(
        _ settings: ConnectionSettings, reactor: PostgresReactor, statementCacheSize: Int,
        statementTimeout: Duration?, logger: Logger
    ) throws -> PostgresConnection {
        let handle = withCStrings(settings.keywords) { keywords in
            withCStrings(settings.values) { values in
                PQconnectdbParams(keywords, values, 0)
            }
        }
        guard let handle else {
            throw PostgresError(
                code: .connectionFailed, reason: "libpq could not allocate a connection", unanswered: true)
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(handle))
            PQfinish(handle)
            throw PostgresError(
                code: .connectionFailed, reason: "cannot connect to Postgres",
                serverMessage: message, unanswered: true)
        }
        if settings.checksServerSettings, let unsuitable = checkServerSettings(handle) {
            PQfinish(handle)
            throw unsuitable
        }
        guard PQsetnonblocking(handle, 1) == 0 else {
            let message = String(cString: PQerrorMessage(handle))
            PQfinish(handle)
            throw PostgresError(
                code: .connectionFailed, reason: "cannot connect to Postgres",
                serverMessage: message, unanswered: true)
        }
        let connection = PostgresConnection(
            handle: handle, reactor: reactor, logger: logger,
            statementCacheSize: statementCacheSize, statementTimeout: statementTimeout)
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

    /// Asks a new connection's server (still blocking) for the settings row decoding relies on,
    /// as ``ConnectionSettings/checksServerSettings`` asks; the error when they do not suit.
    private static func checkServerSettings(_ handle: OpaquePointer) -> PostgresError? {
        guard let result = PQexec(handle, ConnectionSettings.serverSettingsQuery) else {
            return PostgresError(code: .connectionFailed, reason: "cannot connect to Postgres", unanswered: true)
        }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1, PQnfields(result) == 2 else {
            return PostgresError(
                code: .connectionFailed, reason: "cannot read the server's settings",
                serverMessage: String(cString: PQresultErrorMessage(result)), unanswered: true)
        }
        let unsuitable = ConnectionSettings.unsuitable(
            dateStyle: String(cString: PQgetvalue(result, 0, 0)), byteaOutput: String(cString: PQgetvalue(result, 0, 1)))
        return unsuitable.map { PostgresError(code: .invalidConfiguration, reason: $0) }
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
    /// in one string (migrations) and works in an aborted transaction (`ROLLBACK`). Only on a
    /// connection lent whole: the simple protocol needs pipeline mode off, so nothing in flight.
    /// `timed` false lets it run past the statement timeout (a migration may take long).
    func executeScript(_ sql: String, timed: Bool = true) async throws {
        try checkOpen()
        try checkSQL(sql)
        let results = try await roundTrip(endsWithSync: false, timed: timed) { handle, state in
            // A deferred BEGIN goes first, in the same string: the simple protocol runs them in order.
            let script = state.deferredBegin.map { "\($0);\n\(sql)" } ?? sql
            guard PQpipelineStatus(handle) == PQ_PIPELINE_OFF || PQexitPipelineMode(handle) == 1,
                PQsendQuery(handle, script) == 1
            else { throw error(from: nil) }
            state.deferredBegin = nil
        }
        for result in results { _ = try check(result) }
    }

    /// Whether the connection is in an open transaction (including a failed one).
    var isInTransaction: Bool { [PQTRANS_INTRANS, PQTRANS_INERROR].contains(transactionStatus) }

    /// Whether the transaction this connection is in has failed, so only `ROLLBACK` is accepted.
    var isInFailedTransaction: Bool { transactionStatus == PQTRANS_INERROR }

    /// libpq's view of the session's transaction, as of the last answer read.
    private var transactionStatus: PGTransactionStatusType {
        state.withLock { _ in PQtransactionStatus(handle) }
    }

    /// Whether the session is up and the connection was not marked unusable.
    private var isHealthy: Bool {
        state.withLock { !$0.isUnusable && PQstatus(handle) == CONNECTION_OK }
    }

    /// Whether the connection can take statements: open, and not found broken. The reactor reads
    /// what the server says on an idle connection as it arrives, so a connection the server closed
    /// while it sat idle (a restart sends a FATAL message and closes the socket) is known broken.
    func isUsable() -> Bool {
        !isClosed.load(ordering: .relaxed) && isHealthy
    }

    /// Makes the connection fit for its next user: rolls back a transaction left open. False if it
    /// must be thrown away instead.
    func prepareForReuse() async -> Bool {
        guard isHealthy else { return false }
        switch transactionStatus {
        case PQTRANS_IDLE:
            return true
        case PQTRANS_INTRANS, PQTRANS_INERROR:
            logger.debug("rolling back a transaction left open on a pooled connection")
            return (try? await executeScript("ROLLBACK")) != nil && isHealthy
                && transactionStatus == PQTRANS_IDLE
        default:
            return false
        }
    }

    /// Has `begin` sent with the next statement or script instead of on its own.
    func deferBegin(_ begin: String) {
        state.withLock { $0.deferredBegin = begin }
    }

    /// Drops a deferred `BEGIN` still unsent; true if there was one (no statement ran since).
    func cancelDeferredBegin() -> Bool {
        state.withLock { $0.deferredBegin.take() != nil }
    }

    // MARK: - Waiting for answers

    /// Sends a statement with `send` (libpq `PQsend…` calls; it throws if one fails) and waits,
    /// without blocking, for all the results it answers with.
    private func roundTrip(
        endsWithSync: Bool, timed: Bool = true, _ send: (OpaquePointer, inout State) throws -> Void
    ) async throws -> [PostgresResult] {
        let waitUntil = PostgresClient.waitLimit
        Self.sent.increment()
        return try await withCheckedThrowingContinuation { continuation in
            let failed = state.withLock { state -> [Completion] in
                do {
                    try send(handle, &state)
                } catch {
                    return [(continuation, .failure(error))]
                }
                let now = ContinuousClock.now
                state.inFlight.append(
                    Pending(
                        continuation: continuation, endsWithSync: endsWithSync, sent: now,
                        abandonAt: timed ? statementTimeout.map { now + $0 } : nil, waitUntil: waitUntil))
                // The reactor watches the socket already. What libpq could not send yet leaves when
                // it is writable.
                guard PQflush(handle) != 0 else { return [] }
                guard PQstatus(handle) == CONNECTION_OK else { return brokenConnection(&state) }
                return watch(writable: true, &state)
            }
            for (waiter, outcome) in failed { waiter.resume(with: outcome) }
        }
    }

    /// Called by the reactor when the socket is readable or, while a statement is being sent,
    /// writable.
    func socketIsReady() {
        let completions = state.withLock { state -> [Completion] in
            guard !isClosed.load(ordering: .acquiring) else { return [] }
            var completions: [Completion] = []
            var writable = false
            if state.inFlight.isEmpty {
                // Idle: the server speaks only with a notice, or to end the session (an error, then
                // the end of the stream).
                _ = PQconsumeInput(handle)
            } else if case .wait(writable: true) = advance(&state, completions: &completions) {
                writable = true
            }
            guard PQstatus(handle) == CONNECTION_OK else { return completions + brokenConnection(&state) }
            return completions + watch(writable: writable, &state)
        }
        for (waiter, outcome) in completions { waiter.resume(with: outcome) }
    }

    /// Marks the connection unusable, fails what is in flight, and has the reactor watch it no more:
    /// its socket, readable for ever at the end of the stream, would wake the reactor at every turn,
    /// and libpq may have closed it already, its number free for a newer connection.
    private func brokenConnection(_ state: inout State) -> [Completion] {
        reactor.unregister(self)
        return failAll(&state, error(from: nil))
    }

    /// Has the reactor watch the socket for being writable too, or no more; what is in flight fails
    /// if it cannot. Under the lock, so that the watch always matches `watchesWritable`.
    private func watch(writable: Bool, _ state: inout State) -> [Completion] {
        guard writable != state.watchesWritable else { return [] }
        state.watchesWritable = writable
        guard reactor.watch(socket, writable: writable) else { return failAll(&state, Self.unwatchable) }
        return []
    }

    /// What the statements in flight wait for after `advance`.
    private enum Step {
        case finished
        /// The socket to be readable, and writable too when part of a statement is unsent.
        case wait(writable: Bool)
    }

    /// Sends what is left of the statements in flight, reads what arrived, and finishes each
    /// statement whose last result is in.
    private func advance(_ state: inout State, completions: inout [Completion]) -> Step {
        guard !state.inFlight.isEmpty else { return .finished }
        let flushed = PQflush(handle)
        guard flushed >= 0, PQconsumeInput(handle) == 1 else {
            completions += failAll(&state, error(from: nil))
            return .finished
        }
        // In pipeline mode libpq ends each statement's results with a null; two in a row mean
        // nothing more is in yet.
        var nulls = 0
        while !state.inFlight.isEmpty, PQisBusy(handle) == 0 {
            let endsWithSync = state.inFlight[state.inFlight.startIndex].endsWithSync
            guard let pointer = PQgetResult(handle) else {
                if endsWithSync {
                    nulls += 1
                    if nulls > 1 { break }
                } else {
                    finishOldest(&state, into: &completions)
                }
                continue
            }
            nulls = 0
            let result = PostgresResult(pointer)
            switch result.status {
            case PGRES_PIPELINE_SYNC:
                finishOldest(&state, into: &completions)
            case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
                completions += failAll(&state, PostgresError(code: .queryFailed, reason: "COPY is not supported"))
                return .finished
            default:
                state.oldestResults.append(result)
            }
        }
        return state.inFlight.isEmpty ? .finished : .wait(writable: flushed == 1)
    }

    private static let unwatchable = PostgresError(
        code: .connectionFailed, reason: "cannot watch the connection's socket")

    /// Takes the oldest statement in flight, to succeed with its results if its caller still waits.
    private func finishOldest(_ state: inout State, into completions: inout [Completion]) {
        let finished = state.inFlight.removeFirst()
        if let continuation = finished.continuation { completions.append((continuation, .success(state.oldestResults))) }
        state.oldestResults = []
    }

    /// Fails every statement in flight and marks the connection unusable: libpq may still hold
    /// their commands, whose answers would go to the next statements sent.
    private func failAll(_ state: inout State, _ error: any Error) -> [Completion] {
        state.isUnusable = true
        defer {
            state.inFlight.removeAll()
            state.oldestResults = []
        }
        return state.inFlight.compactMap { pending in pending.continuation.map { ($0, Result.failure(error)) } }
    }

    /// Called by the reactor every so often: ends the waits that are over. When the oldest statement
    /// in flight has waited past the statement timeout, the connection is abandoned (everything in
    /// flight fails, the pool discards it); a caller's own limit ends only its wait. Either error says
    /// whether the server had sent nothing, on any connection the reactor watches, since the statement
    /// left (`unanswered`): a silent server, not merely a slow statement.
    func endOverdueWaits(now: ContinuousClock.Instant, lastHeard: ContinuousClock.Instant) {
        let completions = state.withLock { state -> [Completion] in
            guard let oldest = state.inFlight.first else { return [] }
            if let abandonAt = oldest.abandonAt, abandonAt <= now, let statementTimeout {
                reactor.unregister(self)
                return failAll(
                    &state,
                    PostgresError(
                        code: .timeout, reason: "Postgres did not answer within \(statementTimeout); the connection was abandoned",
                        unanswered: lastHeard < oldest.sent))
            }
            var ended: [Completion] = []
            for index in state.inFlight.indices {
                guard let waitUntil = state.inFlight[index].waitUntil, waitUntil <= now,
                    let continuation = state.inFlight[index].continuation
                else { continue }
                state.inFlight[index].continuation = nil
                let error = PostgresError(
                    code: .timeout, reason: "Postgres did not answer within the caller's time limit",
                    unanswered: lastHeard < state.inFlight[index].sent)
                ended.append((continuation, .failure(error)))
            }
            return ended
        }
        for (waiter, outcome) in completions { waiter.resume(with: outcome) }
    }

    // MARK: - Running statements

    /// Runs one statement in pipeline mode, through a cached prepared statement (prepared in the
    /// same round trip on first use, or unnamed when caching is off), and returns its successful
    /// result.
    private func run(_ sql: String, _ parameters: [any PostgresEncodable]) async throws
        -> PostgresResult
    {
        try checkOpen()
        let bindings = try PostgresBindings(parameters)
        let key = StatementKey(sql: sql, types: bindings.types)
        let (name, results) = try await runOnce(key, bindings)
        guard let name, let failed = results.first(where: { !$0.isSuccess }), failed.isStalePlan
        else { return try check(results) }
        // A table the statement reads changed shape since it was prepared. Forget the statement;
        // run it again at once unless that error has just aborted the caller's transaction.
        state.withLock { forget(key, named: name, in: &$0) }
        guard !isInTransaction else { return try check(results) }
        logger.debug(
            "re-preparing a statement whose plan went stale",
            metadata: ["db.statement.name": "\(name)"])
        return try check(await runOnce(key, bindings).results)
    }

    /// Sends a statement and returns its prepared statement's name with its results. A statement
    /// whose `Parse` failed is forgotten: its name names nothing on the server.
    private func runOnce(_ key: StatementKey, _ bindings: PostgresBindings) async throws
        -> (name: String?, results: [PostgresResult])
    {
        var sent: (name: String?, prepared: Bool) = (nil, false)
        let results = try await roundTrip(endsWithSync: true) { handle, state in
            sent = try send(key, bindings, handle, &state)
        }
        // The `Parse` answers just before the statement itself.
        if let name = sent.name, sent.prepared, results.count >= 2, !results[results.count - 2].isSuccess {
            state.withLock { forget(key, named: name, in: &$0) }
        }
        return (sent.name, results)
    }

    private func forget(_ key: StatementKey, named name: String, in state: inout State) {
        if state.statements[key] == name { state.statements[key] = nil }
    }

    /// Queues a statement and its sync, after a deferred `BEGIN` if there is one, preparing it first
    /// when it is not cached yet (emptying a full cache first). Returns the prepared statement's
    /// name (nil when caching is off), and whether it was prepared now. A statement only partly queued
    /// leaves the pipeline out of step, so the connection is then marked unusable.
    private func send(
        _ key: StatementKey, _ bindings: PostgresBindings, _ handle: OpaquePointer,
        _ state: inout State
    ) throws -> (name: String?, prepared: Bool) {
        guard !state.isUnusable else {
            // It broke (the server ended it) after it was lent for this statement, which was not
            // sent: a read may go again on a new connection.
            throw PostgresError(code: .connectionFailed, reason: "the connection is unusable", connectionLost: true)
        }
        guard PQpipelineStatus(handle) != PQ_PIPELINE_OFF || PQenterPipelineMode(handle) == 1 else {
            throw error(from: nil)
        }
        // Everything that can refuse the statement comes before anything is queued.
        var name = statementCacheSize > 0 ? state.statements[key] : nil
        let prepares = statementCacheSize > 0 && name == nil
        if name == nil { try checkSQL(key.sql) }
        var queued = true
        if let begin = state.deferredBegin {
            queued = PQsendQueryParams(handle, begin, 0, nil, nil, nil, nil, 0) == 1
            state.deferredBegin = nil
        }
        if queued, prepares {
            if state.statements.count >= statementCacheSize {
                // Dynamic SQL would otherwise grow the cache without bound.
                queued = PQsendQueryParams(handle, "DEALLOCATE ALL", 0, nil, nil, nil, nil, 0) == 1
                state.statements.removeAll()
            }
            state.statementCounter += 1
            let fresh = "aviary_\(state.statementCounter)"
            queued = queued && PQsendPrepare(handle, fresh, key.sql, Int32(key.types.count), key.types) == 1
            state.statements[key] = fresh
            name = fresh
        }
        if queued {
            queued = bindings.withParameters { values, lengths, formats in
                if let name {
                    PQsendQueryPrepared(handle, name, Int32(bindings.count), values, lengths, formats, 0)
                } else {
                    PQsendQueryParams(
                        handle, key.sql, Int32(bindings.count), bindings.types, values, lengths, formats, 0)
                }
            } == 1
        }
        guard queued, PQpipelineSync(handle) == 1 else {
            state.isUnusable = true
            throw error(from: nil)
        }
        return (name, prepares)
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

    /// The statement's own result (the last one: a `BEGIN`, `DEALLOCATE` or `Parse` sent with it comes
    /// first), if every result succeeded; otherwise the error of the first that failed.
    private func check(_ results: [PostgresResult]) throws -> PostgresResult {
        guard let last = results.last else { throw state.withLock { _ in error(from: nil) } }
        if let failed = results.first(where: { !$0.isSuccess }) {
            throw state.withLock { _ in error(from: failed) }
        }
        return last
    }

    /// `result` if it is a success; otherwise the error it carries.
    private func check(_ result: PostgresResult) throws -> PostgresResult {
        guard result.isSuccess else { throw state.withLock { _ in error(from: result) } }
        return result
    }


    /// The error a failed result (or, without one, the connection) reports. Call it under the lock:
    /// it reads the connection's status and message.
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

    /// Whether it reports success rather than an error (or a statement skipped after one).
    var isSuccess: Bool {
        switch status {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY: true
        default: false
        }
    }

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
