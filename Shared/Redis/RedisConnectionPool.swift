import Logging
import NIOCore
import NIOPosix
import Synchronization

/// Up to `poolSize` connections, opened lazily; callers wait in FIFO order when all are lent out.
final class RedisConnectionPool: Sendable {
    /// What a waiter is handed: a free connection, or the right to open one (a slot under `poolSize`).
    private enum Grant: Sendable {
        case connection(RedisConnection)
        case slot
    }

    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Grant, any Error>
    }

    private struct State {
        var idle: [RedisConnection] = []
        /// Connections open or being opened, lent out or idle.
        var openCount = 0
        var waiters = CircularBuffer<Waiter>()
        var nextWaiterID = 0
        var isClosed = false
    }

    private let configuration: RedisConfiguration
    private let threadPool: NIOThreadPool
    private let logger: Logger
    private let state = Mutex(State())

    init(configuration: RedisConfiguration, threadPool: NIOThreadPool, logger: Logger) {
        self.configuration = configuration
        self.threadPool = threadPool
        self.logger = logger
    }

    /// A connection for the caller's exclusive use; give it back with `release`.
    ///
    /// An idle connection the server has closed (after a Redis restart, say) is dropped here and a new
    /// one opened in its place, before any command is written to it.
    func lease() async throws -> RedisConnection {
        switch try await grant() {
        case .connection(let connection) where connection.isIdleAndOpen:
            return connection
        case .connection:
            logger.debug("Dropping an idle Redis connection the server closed")
            return try await open()
        case .slot:
            return try await open()
        }
    }

    /// Returns a leased connection; a broken one is dropped and its slot passed on.
    func release(_ connection: RedisConnection) {
        guard !connection.isBroken else {
            releaseSlot()
            return
        }
        let waiter: Waiter? = state.withLock { state in
            if state.isClosed {
                state.openCount -= 1
                return nil
            }
            if let waiter = state.waiters.popFirst() {
                return waiter
            }
            state.idle.append(connection)
            return nil
        }
        waiter?.continuation.resume(returning: .connection(connection))
    }

    /// Fails every waiter and every later `lease` with `.closed` and drops the idle connections;
    /// connections still lent out are dropped when released.
    func close() {
        // The idle connections are freed as soon as the returned array goes, outside the lock.
        let (_, waiters) = state.withLock { state in
            state.isClosed = true
            state.openCount -= state.idle.count
            defer {
                state.idle = []
                state.waiters = []
            }
            return (state.idle, state.waiters)
        }
        for waiter in waiters {
            waiter.continuation.resume(throwing: RedisError(.closed))
        }
    }

    private func grant() async throws -> Grant {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<Grant, any Error>) in
                let immediate: Result<Grant, any Error>? = state.withLock { state in
                    if state.isClosed {
                        return .failure(RedisError(.closed))
                    }
                    if let connection = state.idle.popLast() {
                        return .success(.connection(connection))
                    }
                    if state.openCount < configuration.poolSize {
                        state.openCount += 1
                        return .success(.slot)
                    }
                    // Checked under the lock so a cancellation that races with queueing is not lost.
                    if Task.isCancelled {
                        return .failure(CancellationError())
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let immediate {
                    continuation.resume(with: immediate)
                }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLock { state in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Opens a connection in a slot the caller holds; gives the slot back if that fails.
    private func open() async throws -> RedisConnection {
        let configuration = configuration
        do {
            let connection = try await threadPool.runIfActive {
                try RedisConnection.connect(configuration)
            }
            logger.debug("Opened a Redis connection")
            return connection
        } catch {
            releaseSlot()
            throw RedisClient.normalize(error)
        }
    }

    private func releaseSlot() {
        let waiter: Waiter? = state.withLock { state in
            if !state.isClosed, let waiter = state.waiters.popFirst() {
                return waiter
            }
            state.openCount -= 1
            return nil
        }
        waiter?.continuation.resume(returning: .slot)
    }
}
