import NIOCore

/// The bookkeeping of `PostgresClient`'s pool, kept under its lock: idle connections, how many
/// slots are taken, and the callers waiting for one in arrival order. It only decides; the client
/// resumes waiters and runs libpq calls outside the lock.
///
/// A quarter of the slots is kept for reads (`Use`): a write holds its connection until its commit
/// is on disk, and a disk that stalls its flushes for a few hundred milliseconds (as virtual disks
/// do) would otherwise let the writes piling up behind it take every slot, and every read wait.
struct ConnectionPoolState {
    /// What a slot is taken for.
    enum Use: Sendable {
        /// Single statements that only read (`PostgresClient.onlyReads`): any slot.
        case reads
        /// Anything else (statements that write, transactions, connections lent whole): at most
        /// `writingCapacity` slots.
        case writes
    }

    /// What a caller gets from the pool.
    enum Slot: Sendable {
        /// An idle connection to reuse.
        case idle(PostgresConnection)
        /// Room to open a new connection (lazily, or to replace one that broke).
        case new
    }

    struct Waiter {
        let id: Int
        let use: Use
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
    /// The slots that `.writes` may take at once: all but a quarter (none kept below 4 slots).
    let writingCapacity: Int
    private(set) var isClosed = false
    /// Most recently returned last, so the busiest connections stay warm.
    private var idle: [PostgresConnection] = []
    /// Slots held by callers: connections in use or being opened.
    private(set) var taken = 0
    /// Those of them taken for `.writes`.
    private(set) var takenForWrites = 0
    private var waiters = CircularBuffer<Waiter>()
    /// After `close`, the shutdowns waiting for the slots still taken to come back.
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []
    /// Connections lent to single statements, which other single statements of the same thread (an
    /// event loop or a reader thread) join in the tick the connection was lent in (see
    /// `PostgresClient.withSharedConnection`).
    private var shared: [ObjectIdentifier: SharedLease] = [:]
    /// For each such thread and use, the connection its single statements join in the current
    /// tick: reads never wait behind a write's commit.
    private var gathering: [Gathering: PostgresConnection] = [:]

    /// Whose single statements a connection gathers: one thread's, reads or writes.
    struct Gathering: Hashable {
        let thread: ObjectIdentifier
        let use: Use
    }
    /// One timer serves all waiters: it is set for the earliest deadline, and since waiters mostly
    /// share one timeout, a newcomer's deadline is later and needs no timer of its own.
    private var timer: (deadline: NIODeadline, task: Scheduled<Void>)?

    init(capacity: Int) {
        self.capacity = capacity
        writingCapacity = capacity - capacity / 4
    }

    /// Takes a slot for `use` if one is free to it, an idle connection that `reactor` watches when
    /// there is one; never queues.
    mutating func acquire(for use: Use, preferring reactor: PostgresReactor? = nil) -> Acquisition {
        if isClosed { return .closed }
        guard mayTake(for: use) else { return .mustWait }
        let preferred = reactor.flatMap { reactor in idle.lastIndex { $0.reactor === reactor } }
        if let connection = preferred.map({ idle.remove(at: $0) }) ?? idle.popLast() {
            take(for: use)
            return .slot(.idle(connection))
        }
        if taken + idle.count < capacity {
            take(for: use)
            return .slot(.new)
        }
        return .mustWait
    }

    /// Whether a slot, when there is one, may be taken for `use`: reads take any, writes up to
    /// `writingCapacity`.
    private func mayTake(for use: Use) -> Bool {
        use == .reads || takenForWrites < writingCapacity
    }

    private mutating func take(for use: Use) {
        taken += 1
        if use == .writes { takenForWrites += 1 }
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

    /// Records that `connection`, lent for one statement, takes the other single statements of
    /// `gathering` until `endGathering`.
    mutating func share(_ connection: PostgresConnection, gathering key: Gathering) {
        shared[ObjectIdentifier(connection)] = SharedLease()
        gathering[key] = connection
    }

    /// The connection gathering the single statements of `gathering` in this tick, counting one
    /// more statement on it, if there is one with fewer than `limit` in flight.
    mutating func join(_ key: Gathering, limit: Int) -> PostgresConnection? {
        guard !isClosed, let connection = gathering[key],
            let lease = shared[ObjectIdentifier(connection)], lease.statements < limit
        else { return nil }
        shared[ObjectIdentifier(connection)]?.statements += 1
        return connection
    }

    /// Ends the tick in which `connection` took the single statements of `gathering`. True if none
    /// is in flight any more, so its slot is to be given back.
    mutating func endGathering(_ connection: PostgresConnection, gathering key: Gathering) -> Bool {
        if gathering[key] === connection { gathering[key] = nil }
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

    /// Gives back a slot taken for `use`, with its connection if that can be reused. The first
    /// waiter it is free to takes it over: a waiting write lets the reads behind it pass while the
    /// writes hold all the slots they may.
    mutating func release(_ connection: PostgresConnection?, takenFor use: Use) -> Release {
        taken -= 1
        if use == .writes { takenForWrites -= 1 }
        guard !isClosed else {
            defer { if taken == 0 { drainWaiters.removeAll() } }
            return .closed(drained: taken == 0 ? drainWaiters : [])
        }
        if let index = waiters.firstIndex(where: { mayTake(for: $0.use) }) {
            let waiter = waiters.remove(at: index)
            take(for: waiter.use)
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
