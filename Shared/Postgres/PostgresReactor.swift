import CEpoll
import ChannelSupport
import Foundation
import Locking
import Logging
import Synchronization

/// The thread of a `PostgresClient` that waits on its connections' sockets and finishes the
/// statements whose answers arrived.
///
/// Every connection's socket stays watched (`epoll`, level-triggered) from its opening to its
/// closing. A statement is sent by its caller (libpq in non-blocking mode), which then suspends;
/// when the answer is readable this thread reads it with libpq and resumes the caller. Sending
/// costs the caller no system call besides the send itself, answers that arrive together are
/// finished in one pass, and what the server says on an idle connection (the error and end of
/// stream of a restart) is read at once, so the pool knows the connection is broken before it
/// lends it again.
///
/// The thread is also a `TaskExecutor`. A task that prefers it is resumed, when its answer is read,
/// on this thread within the same pass, instead of being handed to another thread that must wake
/// up for it; its next statement leaves from here too. That is how a client written in C runs
/// (`pgbench` polls its connections and runs its clients on the same threads), and it suits work
/// that is mostly statements in a row. Nothing else on this thread reads answers while such a task
/// runs, so it must not block or compute for long.
///
/// Every `sweepInterval` it also ends the waits that are over (`endOverdueWaits`): a stalled server
/// sends nothing that would wake it.
final class PostgresReactor: TaskExecutor, Sendable {
    private let epoll: Int32
    /// Written to wake the loop: for jobs enqueued while it waits, and for shutdown.
    private let wakeup: Int32
    /// The jobs of tasks that prefer this thread and the work given to `execute`, in arrival order,
    /// and whether the loop is (about to be) waiting in `epoll_wait`, so that whoever enqueues must
    /// wake it.
    private let jobs = Locked<(queue: [Work], isWaiting: Bool)>(([], false))

    private enum Work: Sendable {
        case job(UnownedJob)
        case closure(@Sendable () -> Void)
    }
    /// The connections whose sockets are registered, by descriptor.
    private let connections = Locked<[Int32: PostgresConnection]>([:])
    /// Whether the loop has ended, and who waits for it to end (every caller of ``shutdown()``).
    private let ending = Locked<(ended: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    private let isStopping = Atomic<Bool>(false)
    /// The loop's thread (`pthread_self`), once it has started.
    private let thread = Atomic<UInt>(0)
    private let logger: Logger
    /// How often waits are checked against their limits, which sets how late past its limit a wait
    /// may end.
    private static let sweepInterval = Duration.milliseconds(100)

    init(logger: Logger) throws {
        self.logger = logger
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else {
            throw PostgresError(code: .connectionFailed, reason: "epoll_create1 failed: errno \(errno)")
        }
        wakeup = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard wakeup >= 0 else {
            close(epoll)
            throw PostgresError(code: .connectionFailed, reason: "eventfd failed: errno \(errno)")
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeup
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup, &event)
        Thread { [self] in run() }.start()
    }

    /// Whether the caller runs on this reactor's thread.
    var isCurrent: Bool { thread.load(ordering: .relaxed) == UInt(pthread_self()) }

    /// How many connections this reactor watches.
    var connectionCount: Int { connections.withLock { $0.count } }

    /// Watches a new connection's socket for answers.
    func register(_ connection: PostgresConnection) throws {
        let socket = connection.socket
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = socket
        connections.withLock { $0[socket] = connection }
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event) == 0 else {
            connections.withLock { $0[socket] = nil }
            throw PostgresError(code: .connectionFailed, reason: "epoll_ctl failed: errno \(errno)")
        }
    }

    /// Stops watching a connection's socket; call it before libpq closes the socket. libpq closes it
    /// by itself when the connection breaks, and the descriptor may then belong to a newer
    /// connection already: only the connection registered under it is removed.
    func unregister(_ connection: PostgresConnection) {
        let socket = connection.socket
        let removed = connections.withLock { connections in
            guard connections[socket] === connection else { return false }
            connections[socket] = nil
            return true
        }
        if removed { _ = epoll_ctl(epoll, EPOLL_CTL_DEL, socket, nil) }
    }

    /// Watches `socket` for being writable too (while part of a statement is unsent), or no more.
    func watch(_ socket: Int32, writable: Bool) -> Bool {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | (writable ? EPOLLOUT.rawValue : 0)
        event.data.fd = socket
        return epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event) == 0
    }

    /// Ends the loop and waits for its thread to finish. Connections must be unregistered first.
    func shutdown() async {
        await withCheckedContinuation { continuation in
            let ended = ending.withLock { ending in
                if !ending.ended { ending.waiters.append(continuation) }
                return ending.ended
            }
            if ended { continuation.resume() } else { stop() }
        }
    }

    /// Tells the loop to end, without waiting for it.
    func stop() {
        guard !isStopping.exchange(true, ordering: .sequentiallyConsistent) else { return }
        wake()
    }

    /// Runs `job` on this thread after the answers being read, or at once if the loop is waiting.
    /// Once the loop has ended, jobs go to Swift's global executor instead, so that no task hangs.
    func enqueue(_ job: consuming ExecutorJob) {
        queue(.job(UnownedJob(job)))
    }

    /// Runs `work` on this thread after the jobs queued so far: as `EventLoop.execute` does, at the
    /// end of the pass when the caller runs here.
    func execute(_ work: @escaping @Sendable () -> Void) {
        queue(.closure(work))
    }

    private func queue(_ work: Work) {
        let (isWaiting, hasEnded) = jobs.withLock { jobs in
            let isWaiting = jobs.isWaiting
            jobs.isWaiting = false
            jobs.queue.append(work)
            return (isWaiting, isStopping.load(ordering: .sequentiallyConsistent))
        }
        if hasEnded {
            runLeftoverJobs()
        } else if isWaiting {
            wake()
        }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeup, &one, MemoryLayout<UInt64>.size)
    }

    /// Runs the jobs queued so far, and those they queue in turn.
    private func runJobs() {
        // Taken by swapping buffers: the lock is held for no copy.
        var batch: [Work] = []
        while true {
            jobs.withLock { swap(&batch, &$0.queue) }
            if batch.isEmpty { return }
            for work in batch {
                switch work {
                case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
                case .closure(let closure): closure()
                }
            }
            batch.removeAll(keepingCapacity: true)
        }
    }

    /// Hands jobs queued after the loop ended to Swift's global executor, and runs the rest here.
    private func runLeftoverJobs() {
        let leftovers = jobs.withLock { jobs in
            defer { jobs.queue.removeAll() }
            return jobs.queue
        }
        for work in leftovers {
            switch work {
            case .job(let job): globalConcurrentExecutor.enqueue(ExecutorJob(job))
            case .closure(let closure): closure()
            }
        }
    }

    private func run() {
        // Named here: a new thread otherwise keeps the name of the one that created it.
        aviary_name_current_thread("aviary-postgres")
        thread.store(UInt(pthread_self()), ordering: .relaxed)
        let capacity = 64
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer {
            events.deallocate()
            close(wakeup)
            close(epoll)
            runLeftoverJobs()
            let waiters = ending.withLock { ending in
                ending.ended = true
                defer { ending.waiters = [] }
                return ending.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        var nextSweep = ContinuousClock.now + Self.sweepInterval
        // When a socket last had something to read: the server's last sign of life.
        var lastHeard = ContinuousClock.now
        while !isStopping.load(ordering: .sequentiallyConsistent) {
            runJobs()
            let now = ContinuousClock.now
            if now >= nextSweep {
                nextSweep = now + Self.sweepInterval
                for connection in connections.withLock({ Array($0.values) }) {
                    connection.endOverdueWaits(now: now, lastHeard: lastHeard)
                }
            }
            // Waits only when no job is queued; a job enqueued from now on wakes the wait.
            let timeout: Int32 = jobs.withLock { jobs in
                jobs.isWaiting = jobs.queue.isEmpty
                return jobs.isWaiting ? Int32(Self.sweepInterval.milliseconds) : 0
            }
            let count = epoll_wait(epoll, events, Int32(capacity), timeout)
            jobs.withLock { $0.isWaiting = false }
            guard count >= 0 else {
                if errno == EINTR { continue }
                logger.critical("epoll_wait failed; Postgres answers can no longer be read", metadata: ["errno": "\(errno)"])
                return
            }
            for index in 0..<Int(count) {
                let socket = events[index].data.fd
                if socket == wakeup {
                    var value: UInt64 = 0
                    _ = read(wakeup, &value, MemoryLayout<UInt64>.size)
                    continue
                }
                if events[index].events & EPOLLIN.rawValue != 0 { lastHeard = .now }
                connections.withLock({ $0[socket] })?.socketIsReady()
            }
        }
    }
}
