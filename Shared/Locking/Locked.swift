#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value that threads share, read and changed only while its lock is held: what
/// `Synchronization.Mutex` is, on pthread's mutex. On Linux `Mutex` waits on a futex of its own,
/// which ThreadSanitizer does not see as a lock, so under `--sanitize=thread` every value behind a
/// `Mutex` reads to it as a race, and a real race would be lost among them; it sees pthread's
/// (`deploy/local/tsan.sh`).
///
/// A lock lives as long as what holds it: the mutex and the value are allocated once, when it is
/// made, and a call of ``withLock(_:)`` allocates nothing.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Behind a pointer rather than a stored property, which Swift would check for overlapping
    /// access at run time on every call: the lock is what keeps accesses apart.
    private let value: UnsafeMutablePointer<Value>

    public init(_ initial: sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let made = pthread_mutex_init(mutex, nil)
        precondition(made == 0, "pthread_mutex_init failed: \(made)")
        value = .allocate(capacity: 1)
        value.initialize(to: initial)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with the value while holding the lock. `body` must not take this lock again.
    public func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
