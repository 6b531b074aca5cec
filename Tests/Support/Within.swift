import Locking

/// How `operation` ended, or nil if it had not ended after `timeout`. A call that never returns then
/// fails the test instead of hanging it: the operation is left running, since a task that waits on a
/// continuation nobody resumes cannot be cancelled (and `.timeLimit` cannot end it either).
public func outcome<T: Sendable>(
    within timeout: Duration, of operation: @escaping @Sendable () async throws -> T
) async -> Result<T, any Error>? {
    await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>?, Never>) in
        let waiting = Locked<CheckedContinuation<Result<T, any Error>?, Never>?>(continuation)
        let finish = { @Sendable (result: Result<T, any Error>?) in
            waiting.withLock { $0.take() }?.resume(returning: result)
        }
        let timer = Task {
            try await Task.sleep(for: timeout)
            finish(nil)
        }
        Task {
            do {
                finish(.success(try await operation()))
            } catch {
                finish(.failure(error))
            }
            timer.cancel()
        }
    }
}
