import Foundation
import Synchronization

/// Runs async `operation` and blocks the calling thread until it finishes.
///
/// Only for a Postgres pool thread inside a transaction body, which is synchronous by design: the
/// relay must write to Redis while it holds the outbox rows locked. Blocking that thread is what it
/// is for (it blocks on libpq the same way), and the operation runs elsewhere — in a task on the
/// cooperative pool, its hiredis calls on the Redis client's own threads — so it cannot wait for the
/// thread it blocks. Never call this from an async context or an event loop.
func blockingAwait<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = BlockingOutcome<T>()
    Task {
        let result: Result<T, any Error>
        do {
            result = .success(try await operation())
        } catch {
            result = .failure(error)
        }
        outcome.finish(result)
    }
    return try outcome.wait().get()
}

private final class BlockingOutcome<T: Sendable>: Sendable {
    private let result = Mutex<Result<T, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func finish(_ value: Result<T, any Error>) {
        result.withLock { $0 = value }
        done.signal()
    }

    func wait() -> Result<T, any Error> {
        done.wait()
        return result.withLock { $0! }
    }
}
