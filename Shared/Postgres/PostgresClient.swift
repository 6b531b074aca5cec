import ChannelSupport
import Locking
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// A pool of libpq connections to one database, with `async` queries and transactions.
///
/// At most `poolSize` connections, opened when first needed; callers beyond that wait in arrival
/// order (up to `poolWaitTimeout`), and a quarter of them is kept for statements that only read
/// (`onlyReads`). The single statements (`query`, `execute`) that callers on one event loop start
/// in one tick (or on one reader thread in one pass) share a connection and leave in one batch,
/// reads apart from writes, so that no read waits for a write's commit to reach the disk.
/// Statements never block a thread: the caller sends with libpq in non-blocking mode and the
/// client's `PostgresReactor` resumes it when the answer is in. Only opening a connection blocks,
/// on NIO's shared thread pool. A connection found broken is discarded and replaced, so the
/// client recovers by itself when the server restarts. Call `shutdown()` before dropping the client.
///
/// Answers are read by `readerThreads` threads of the client's own (`PostgresReactor`), each
/// watching some of the connections, which resume the callers. A task that runs on one of them
/// (`executors`) is resumed there without a thread hop, and its statements go to connections that
/// thread watches.
///
/// A statement waits for its answer at most `statementTimeout`; a caller may wait less for the
/// statements it runs (``waiting(atMost:_:)``). When Postgres leaves a statement unanswered or cannot
/// be reached, a breaker (``ChannelSupport/CircuitBreaker``) refuses statements at once for
/// `breakerPause`, so that callers with another source answer from it without waiting.
public final class PostgresClient: Sendable {
    private let settings: ConnectionSettings
    private let options: PostgresConfiguration.Options
    let logger: Logger
    private let reactors: [PostgresReactor]
    private let state: Locked<ConnectionPoolState>
    private let waiterIDs = Atomic<Int>(0)
    private let breaker: CircuitBreaker

    /// When the statements the current task runs stop waiting for their answers (see
    /// ``waiting(atMost:_:)``).
    @TaskLocal static var waitLimit: ContinuousClock.Instant?

    /// Creates the client; no connection is opened until the first query. Throws
    /// `.invalidConfiguration` for a malformed URL or a pool size below 1.
    public init(configuration: PostgresConfiguration, logger: Logger) throws {
        guard configuration.options.poolSize >= 1 else {
            throw PostgresError(code: .invalidConfiguration, reason: "poolSize must be at least 1")
        }
        guard configuration.options.readerThreads >= 1 else {
            throw PostgresError(code: .invalidConfiguration, reason: "readerThreads must be at least 1")
        }
        settings = try ConnectionSettings(configuration)
        options = configuration.options
        self.logger = logger
        state = Locked(ConnectionPoolState(capacity: configuration.options.poolSize))
        reactors = try (0..<configuration.options.readerThreads).map { _ in try PostgresReactor(logger: logger) }
        breaker = CircuitBreaker(pause: configuration.options.breakerPause)
    }

    /// Runs `body`, whose statements wait for their answers at most `limit` (counted from now)
    /// before failing with `.timeout`: for a read the caller can do without, or answer from
    /// elsewhere, while Postgres is slow to answer. A statement given up on still runs; its
    /// connection reads its answer and drops it.
    public static func waiting<T>(atMost limit: Duration, _ body: () async throws -> T) async rethrows -> T {
        let until = ContinuousClock.now + limit
        return try await $waitLimit.withValue(min(until, waitLimit ?? until), operation: body)
    }

    var transactionRetryLimit: Int { options.transactionRetryLimit }

    /// The threads that read the client's answers, as executors. A task that prefers one runs its
    /// statements one after another without a thread hop per answer (see `PostgresReactor`): for
    /// work that is mostly statements, since anything slow there delays the answers of every
    /// connection that thread watches.
    public var executors: [any TaskExecutor] { reactors }

    /// The reader thread the caller runs on, if it runs on one.
    private var currentReactor: PostgresReactor? { reactors.first { $0.isCurrent } }

    deinit {
        // A safety net for a client dropped without `shutdown()`: the threads must still end.
        for reactor in reactors { reactor.stop() }
    }

    /// Runs one statement and returns its rows. If the connection turns out to be broken (the
    /// server restarted), a statement that only reads runs once more on a fresh connection; one
    /// that writes fails with `.connectionFailed` instead, since it may have committed before the
    /// connection broke and must not run twice.
    public func query(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws
        -> PostgresRows
    {
        try await pastTheBreaker { try await withReconnection(Self.use(of: sql)) { try await $0.query(sql, parameters) } }
    }

    /// Runs one statement and returns how many rows it affected; retried like `query` (only if it
    /// only reads).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws
        -> Int
    {
        try await pastTheBreaker { try await withReconnection(Self.use(of: sql)) { try await $0.execute(sql, parameters) } }
    }

    /// Lends a connection to `body`, which may run several statements (one at a time). A
    /// transaction `body` leaves open is rolled back before the connection is reused. The
    /// connection counts as one for writes: it takes none of the slots kept for reads.
    public func withConnection<T: Sendable>(
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await pastTheBreaker { try await withConnection(for: .writes, waitTimeout: options.poolWaitTimeout, body) }
    }

    /// How many of the pool's connections are lent out now (in use, or being opened for a caller).
    public var connectionsInUse: Int {
        state.withLock { $0.taken }
    }

    /// Whether a statement can run now (`SELECT 1`), for readiness checks; waits for a pooled
    /// connection no longer than the connect timeout. Past the breaker, which an answer closes.
    public func isReachable() async -> Bool {
        do {
            _ = try await withConnection(for: .reads, waitTimeout: options.connectTimeout) {
                try await $0.query("SELECT 1")
            }
            breaker.heardFromServer()
            return true
        } catch {
            return false
        }
    }

    /// Fails waiting callers with `.poolClosed`, lets the callers holding connections finish, closes
    /// every connection and stops the reader threads. Later calls fail with `.poolClosed`.
    public func shutdown() async {
        let (waiters, idle) = state.withLock { $0.close() }
        for waiter in waiters {
            waiter.continuation.resume(throwing: PostgresError(code: .poolClosed))
        }
        for connection in idle { connection.close() }
        // Connections in use close as their holders give them back (`release`).
        await withCheckedContinuation { continuation in
            if state.withLock({ $0.waitForDrain(continuation) }) { continuation.resume() }
        }
        for reactor in reactors { await reactor.shutdown() }
        logger.debug("postgres client shut down")
    }

    // MARK: - Leasing

    /// Runs `body` unless the breaker is open (then `.connectionFailed` at once), and tells the
    /// breaker whether Postgres answered.
    private func pastTheBreaker<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        let probe = try breaker.admit { left in
            PostgresError(
                code: .connectionFailed,
                reason: "Postgres did not answer lately; not tried again for \(left) (or until a probe is answered)")
        }
        do {
            let result = try await body()
            breaker.record(unanswered: false, probe: probe)
            return result
        } catch {
            breaker.record(unanswered: (error as? PostgresError)?.unanswered ?? false, probe: probe)
            throw error
        }
    }

    private func withReconnection<T: Sendable>(
        _ use: ConnectionPoolState.Use, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            return try await withSharedConnection(use, body)
        } catch let error as PostgresError where error.connectionLost && use == .reads {
            logger.debug("retrying a statement on a new connection after the connection broke")
            return try await withSharedConnection(use, body)
        }
    }

    /// Gets a live connection for a slot of the pool taken for `use`, runs `body` with it, and
    /// gives the slot back.
    func withConnection<T: Sendable>(
        for use: ConnectionPoolState.Use, waitTimeout: Duration?, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await lease(for: use, waitTimeout: waitTimeout)
        let result = await outcome { try await body(connection) }
        await giveBack(connection, takenFor: use)
        return try result.get()
    }

    private static func use(of sql: String) -> ConnectionPoolState.Use {
        onlyReads(sql) ? .reads : .writes
    }

    /// A caller on an event loop (or a reader thread) joins, with its single statement, the
    /// connection lent to another single statement of that thread in the same tick (pass), while
    /// fewer than this are in flight on it: the statements then leave in one batch (pipeline mode),
    /// which Postgres reads in one go, and their answers come back together, which costs both sides
    /// fewer wake-ups than a round trip each. Nobody waits behind statements sent in an earlier
    /// tick. The limit is small because one backend runs a batch in order: a statement waiting for
    /// a row lock holds up those behind it (docs/perf.md, "Choices in the code").
    static let gatheringLimit = 8

    /// Runs one statement's `body` on a connection it may share with others of the same `use` (see
    /// `gatheringLimit`). The callers of one pass of a reader thread (`executors`) share one the
    /// same way.
    private func withSharedConnection<T: Sendable>(
        _ use: ConnectionPoolState.Use, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        // The thread whose tick gathers, and how to run something at the end of that tick.
        let thread: ObjectIdentifier
        let atTheEndOfTheTick: (@escaping @Sendable () -> Void) -> Void
        if let loop = MultiThreadedEventLoopGroup.currentEventLoop {
            (thread, atTheEndOfTheTick) = (ObjectIdentifier(loop), { loop.execute($0) })
        } else if let reactor = currentReactor {
            (thread, atTheEndOfTheTick) = (ObjectIdentifier(reactor), { reactor.execute($0) })
        } else {
            return try await withConnection(for: use, waitTimeout: options.poolWaitTimeout, body)
        }
        let key = ConnectionPoolState.Gathering(thread: thread, use: use)
        let connection: PostgresConnection
        if let joined = state.withLock({ $0.join(key, limit: Self.gatheringLimit) }) {
            connection = joined
        } else {
            connection = try await lease(for: use, waitTimeout: options.poolWaitTimeout)
            state.withLock { $0.share(connection, gathering: key) }
            atTheEndOfTheTick {
                if self.state.withLock({ $0.endGathering(connection, gathering: key) }) {
                    Task { await self.giveBack(connection, takenFor: use) }
                }
            }
        }
        let result = await outcome { try await body(connection) }
        if state.withLock({ $0.leave(connection) }) { await giveBack(connection, takenFor: use) }
        return try result.get()
    }

    /// A live connection for a slot of the pool: an idle one the server has not closed (on a reader
    /// thread, one that thread watches if there is one), or a new one.
    /// The caller's wait limit (``waiting(atMost:_:)``) bounds both the wait for a slot and the
    /// opening of a connection, which then goes on and leaves its connection to the pool.
    private func lease(for use: ConnectionPoolState.Use, waitTimeout: Duration?) async throws -> PostgresConnection {
        let limit = Self.waitLimit
        let left = limit.map { max(.zero, ContinuousClock.now.duration(to: $0)) }
        let slot = try await acquire(for: use, waitTimeout: [waitTimeout, left].compactMap(\.self).min())
        if case .idle(let idle) = slot, idle.isUsable() { return idle }
        if case .idle(let broken) = slot {
            logger.debug("replacing a pooled Postgres connection the server closed")
            broken.close()
        }
        do {
            guard let limit else { return try await open() }
            let opening = Task { try await open() }
            if let connection = try await value(of: { try await opening.value }, before: limit) { return connection }
            Task { release(try? await opening.value, takenFor: use) }
        } catch {
            release(nil, takenFor: use)
            throw error
        }
        throw PostgresError(code: .timeout, reason: "no connection to Postgres could be opened within the caller's time limit")
    }

    /// Gives a leased connection's slot back, with the connection unless it is broken.
    private func giveBack(_ connection: PostgresConnection, takenFor use: ConnectionPoolState.Use) async {
        let reusable = await connection.prepareForReuse()
        if !reusable {
            logger.debug("discarding a broken Postgres connection")
            connection.close()
        }
        release(reusable ? connection : nil, takenFor: use)
    }

    /// Opens a connection on NIO's shared thread pool (libpq only connects by blocking), watched by
    /// the caller's reader thread if it runs on one, else by the one watching the fewest.
    private func open() async throws -> PostgresConnection {
        let reactor = currentReactor ?? reactors.min { $0.connectionCount < $1.connectionCount }!
        let (settings, logger) = (self.settings, self.logger)
        let (cacheSize, statementTimeout) = (options.statementCacheSize, options.statementTimeout)
        let connection = try await NIOThreadPool.singleton.runIfActive {
            try PostgresConnection.connect(
                settings, reactor: reactor, statementCacheSize: cacheSize, statementTimeout: statementTimeout,
                logger: logger)
        }
        logger.debug("opened a Postgres connection")
        return connection
    }

    private func acquire(for use: ConnectionPoolState.Use, waitTimeout: Duration?) async throws
        -> ConnectionPoolState.Slot
    {
        let reactor = currentReactor
        switch state.withLock({ $0.acquire(for: use, preferring: reactor) }) {
        case .slot(let slot): return slot
        case .closed: throw PostgresError(code: .poolClosed)
        case .mustWait: break
        }
        let id = waiterIDs.wrappingAdd(1, ordering: .relaxed).newValue
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let immediate: Result<ConnectionPoolState.Slot, any Error>? = state.withLock {
                    state in
                    switch state.acquire(for: use) {
                    case .slot(let slot): return .success(slot)
                    case .closed: return .failure(PostgresError(code: .poolClosed))
                    case .mustWait:
                        // Checked under the lock: a cancellation handler that ran earlier found nothing
                        // to cancel, one that runs later will find this waiter.
                        if Task.isCancelled { return .failure(CancellationError()) }
                        let deadline = waitTimeout.map { NIODeadline.now() + TimeAmount($0) }
                        let waiter = ConnectionPoolState.Waiter(
                            id: id, use: use, continuation: continuation, deadline: deadline)
                        if state.enqueue(waiter), let deadline {
                            state.setTimer(scheduleExpiry(at: deadline), deadline: deadline)
                        }
                        return nil
                    }
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            abandonWait(id: id, error: CancellationError())
        }
    }

    private func abandonWait(id: Int, error: any Error) {
        guard let waiter = state.withLock({ $0.removeWaiter(id: id) }) else { return }
        waiter.continuation.resume(throwing: error)
    }

    private func scheduleExpiry(at deadline: NIODeadline) -> Scheduled<Void> {
        MultiThreadedEventLoopGroup.singleton.any().scheduleTask(deadline: deadline) {
            self.expireWaiters()
        }
    }

    /// Fails the waiters whose wait timed out and sets the timer for the next deadline.
    private func expireWaiters() {
        let expired = state.withLock { state in
            let (expired, next) = state.expireWaiters(now: .now())
            if let next { state.setTimer(scheduleExpiry(at: next), deadline: next) }
            return expired
        }
        for waiter in expired {
            waiter.continuation.resume(throwing: PostgresError(code: .timeout))
        }
    }

    /// Gives a slot back: to the first waiter it is free to if there is one, otherwise to the idle
    /// list (or, once the pool is closed, closes the connection).
    private func release(_ connection: PostgresConnection?, takenFor use: ConnectionPoolState.Use) {
        switch state.withLock({ $0.release(connection, takenFor: use) }) {
        case .handedOver(let waiter, let slot):
            waiter.continuation.resume(returning: slot)
        case .kept:
            break
        case .closed(let drained):
            connection?.close()
            for waiter in drained { waiter.resume() }
        }
    }
}

/// What `body` returns or throws, as a value.
private func outcome<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}
