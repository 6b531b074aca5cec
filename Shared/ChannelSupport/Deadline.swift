import Locking

/// What `work` returns, or nil when `deadline` comes first. `work` is not cancelled then but left
/// to finish in the background: what it waits on may be shared (a pool's connection attempt) or
/// not interruptible (a database statement in flight).
public func value<T: Sendable>(
    of work: @escaping @Sendable () async throws -> T, before deadline: ContinuousClock.Instant
) async throws -> T? {
    let race = DeadlineRace<T>()
    return try await withCheckedThrowingContinuation { continuation in
        race.start(continuation)
        let timer = Task {
            try? await Task.sleep(until: deadline)
            race.finish(.success(nil))
        }
        Task {
            do {
                race.finish(.success(try await work()))
            } catch {
                race.finish(.failure(error))
            }
            timer.cancel()
        }
    }
}

/// Whichever of the work and its deadline ends first resumes the waiting caller; the other finds
/// nothing to resume.
private final class DeadlineRace<T: Sendable>: Sendable {
    private let continuation = Locked<CheckedContinuation<T?, any Error>?>(nil)

    func start(_ continuation: CheckedContinuation<T?, any Error>) {
        self.continuation.withLock { $0 = continuation }
    }

    func finish(_ result: Result<T?, any Error>) {
        continuation.withLock { $0.take() }?.resume(with: result)
    }
}
