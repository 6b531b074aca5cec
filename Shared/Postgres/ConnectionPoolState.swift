import NIOCore

/// The bookkeeping of `PostgresClient`'s pool, kept under its lock: idle connections, how many
/// slots are taken, and the callers waiting for one in arrival order. It only decides; the client
/// resumes waiters and runs libpq calls outside the lock.
struct ConnectionPoolState {
    /// What a caller gets from the pool.
    enum Slot: Sendable {
        /// An idle connection to reuse.
        case idle(PostgresConnection)
        /// Room to open a new connection (lazily, or to replace one that broke).
        case new
    }

    struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Slot, any Error>
        /// When the waiter gives up with `.timeout`; nil to wait for ever.
        let deadline: NIODeadline?
    }

    enum Acquisition {
        case slot(Slot)
        case closed
        case mustWait
    }

    let capacity: Int
    private(set) var isClosed = false
    /// Most recently returned last, so the busiest connections stay warm.
    private var idle: [PostgresConnection] = []
    /// Slots held by callers: connections in use or being opened.
    private(set) var taken = 0
    private var waiters = CircularBuffer<Waiter>()
    /// After `close`, the shutdowns waiting for the slots still taken to come back.
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []
    /// Connections lent to single statements, which other single statements of the same thread (an
    /// event loop or a reader thread) join in the tick the connection was lent in (see
    /// `PostgresClient.withSharedConnection`).
    private var shared: [ObjectIdentifier: SharedLease] = [:]
    /// For each such thread, the connection its single statements join in the current tick.
    private var gathering: [ObjectIdentifier: PostgresConnection] = [:]
    /// One timer serves all waiters: it is set for the earliest deadline, and since waiters mostly
    /// share one timeout, a newcomer's deadline is later and needs no timer of its own.
    private var timer: (deadline: NIODeadline, task: Scheduled<Void>)?

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Takes a slot if one is free, an idle connection that `reactor` watches when there is one;
    /// never queues.
    mutating func acquire(preferring reactor: PostgresReactor? = nil) -> Acquisition {
        if isClosed { return .closed }
        let preferred = reactor.flatMap { reactor in idle.lastIndex { $0.reactor === reactor } }
        if let connection = preferred.map({ idle.remove(at: $0) }) ?? idle.popLast() {
            taken += 1
            return .slot(.idle(connection))
        }
        if taken + idle.count < capacity {
            taken += 1
            return .slot(.new)
        }
        return .mustWait
    }

    /// Queues `waiter`. Returns true if the timer must be set for its deadline (which the caller
    /// does, then records with `setTimer`).
    mutating func enqueue(_ waiter: Waiter) -> Bool {
        waiters.append(waiter)
        guard let deadline = waiter.deadline else { return false }
        return timer.map { deadline < $0.deadline } ?? true
    }

    mutating func setTimer(_ task: Scheduled<Void>, deadline: NIODeadline) {
        timer?.task.cancel()
        timer = (deadline, task)
    }

    /// Removes the waiters whose deadline has passed, and returns them with the next deadline the
    /// timer must be set for, if any.
    mutating func expireWaiters(now: NIODeadline) -> (expired: [Waiter], next: NIODeadline?) {
        timer = nil
        var expired: [Waiter] = []
        var remaining = CircularBuffer<Waiter>(initialCapacity: waiters.count)
        var next: NIODeadline?
        for waiter in waiters {
            guard let deadline = waiter.deadline else {
                remaining.append(waiter)
                continue
            }
            if deadline <= now {
                expired.append(waiter)
            } else {
                remaining.append(waiter)
                next = min(next ?? deadline, deadline)
            }
        }
        waiters = remaining
        return (expired, next)
    }

    /// Removes a waiter that gave up (timeout, cancellation), if it is still waiting.
    mutating func removeWaiter(id: Int) -> Waiter? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index)
    }

    /// A connection lent to single statements: how many are in flight on it, and whether callers
    /// may still join it (until the end of the tick it was lent in).
    private struct SharedLease {
        var statements = 1
        var isGathering = true
    }

    /// Records that `connection`, lent for one statement on `thread`, takes the thread's other single
    /// statements until `endGathering`.
    mutating func share(_ connection: PostgresConnection, thread: ObjectIdentifier) {
        shared[ObjectIdentifier(connection)] = SharedLease()
        gathering[thread] = connection
    }

    /// The connection gathering `thread`'s single statements in this tick, counting one more
    /// statement on it, if there is one with fewer than `limit` in flight.
    mutating func join(thread: ObjectIdentifier, limit: Int) -> PostgresConnection? {
        guard !isClosed, let connection = gathering[thread],
            let lease = shared[ObjectIdentifier(connection)], lease.statements < limit
        else { return nil }
        shared[ObjectIdentifier(connection)]?.statements += 1
        return connection
    }

    /// Ends the tick in which `connection` took `thread`'s single statements. True if none is in
    /// flight any more, so its slot is to be given back.
    mutating func endGathering(_ connection: PostgresConnection, thread: ObjectIdentifier) -> Bool {
        if gathering[thread] === connection { gathering[thread] = nil }
        let id = ObjectIdentifier(connection)
        shared[id]?.isGathering = false
        guard shared[id]?.statements == 0 else { return false }
        shared[id] = nil
        return true
    }

    /// Counts one statement on a shared connection finished. True if that was the last and the tick
    /// is over, so its slot is to be given back.
    mutating func leave(_ connection: PostgresConnection) -> Bool {
        let id = ObjectIdentifier(connection)
        shared[id]?.statements -= 1
        guard let lease = shared[id], lease.statements == 0, !lease.isGathering else { return false }
        shared[id] = nil
        return true
    }

    /// What became of a slot given back.
    enum Release {
        /// The waiter that now takes the slot over, and what it gets.
        case handedOver(Waiter, Slot)
        /// Its connection, if any, joined the idle list.
        case kept
        /// The pool is closed: the caller closes the connection, and resumes `drained` (the
        /// shutdowns that waited for the last slot).
        case closed(drained: [CheckedContinuation<Void, Never>])
    }

    /// Gives back a slot, with its connection if that can be reused.
    mutating func release(_ connection: PostgresConnection?) -> Release {
        taken -= 1
        guard !isClosed else {
            defer { if taken == 0 { drainWaiters.removeAll() } }
            return .closed(drained: taken == 0 ? drainWaiters : [])
        }
        if let waiter = waiters.popFirst() {
            taken += 1
            return .handedOver(waiter, connection.map(Slot.idle) ?? .new)
        }
        if let connection { idle.append(connection) }
        return .kept
    }

    /// After `close`: whether every slot is back; otherwise `waiter` is resumed when the last one is.
    mutating func waitForDrain(_ waiter: CheckedContinuation<Void, Never>) -> Bool {
        guard taken > 0 else { return true }
        drainWaiters.append(waiter)
        return false
    }

    /// Refuses further use; returns the waiters to fail and the idle connections to close.
    mutating func close() -> (waiters: [Waiter], idle: [PostgresConnection]) {
        isClosed = true
        timer?.task.cancel()
        timer = nil
        defer {
            waiters.removeAll()
            idle.removeAll()
        }
        return (Array(waiters), idle)
    }
}
