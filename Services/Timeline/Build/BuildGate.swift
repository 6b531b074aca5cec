import Locking

/// Runs at most one operation per key at a time in this process: callers that arrive while one
/// runs wait for it and share its outcome, so a burst of reads of one missing timeline rebuilds it once.
final class BuildGate: Sendable {
    private let running = Locked<[String: Task<Bool, any Error>]>([:])

    func once(_ key: String, _ operation: @escaping @Sendable () async throws -> Bool) async throws -> Bool {
        let (task, started) = running.withLock { running in
            if let task = running[key] { return (task, false) }
            let task = Task { try await operation() }
            running[key] = task
            return (task, true)
        }
        let result = await task.result
        if started { _ = running.withLock { $0.removeValue(forKey: key) } }
        return try result.get()
    }
}
