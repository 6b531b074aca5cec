import Locking

/// The timeline builds a read asks for and does not wait for, run at most `limit` at a time in this
/// process, oldest request first, each key once while it is queued or running. A flushed Redis then
/// costs Postgres `limit` builds at a time, while the reads of timelines still waiting for theirs are
/// answered from the services (a page, not a whole set).
final class BackgroundBuilds: Sendable {
    private struct State {
        var running = 0
        var queued: [(key: String, work: @Sendable () async -> Void)] = []
        /// The keys queued or running.
        var pending: Set<String> = []
    }

    let limit: Int
    private let state = Locked(State())

    init(limit: Int) {
        precondition(limit >= 1, "at least one build at a time")
        self.limit = limit
    }

    /// Runs `work` for `key` when a slot is free, unless a build of `key` is queued or running.
    func start(_ key: String, _ work: @escaping @Sendable () async -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard state.pending.insert(key).inserted else { return false }
            guard state.running < limit else {
                state.queued.append((key, work))
                return false
            }
            state.running += 1
            return true
        }
        if runNow { run(key, work) }
    }

    /// Runs `work` for `key` in the caller's task when a slot is free and no build of `key` is
    /// queued or running, and returns what it returned; nil, with nothing run, otherwise. The
    /// slot counts as any other: while it runs, builds asked for wait their turn.
    func runNowIfFree<T: Sendable>(_ key: String, _ work: () async throws -> T) async throws -> T? {
        let claimed = state.withLock { state -> Bool in
            guard state.running < limit, !state.pending.contains(key) else { return false }
            state.pending.insert(key)
            state.running += 1
            return true
        }
        guard claimed else { return nil }
        do {
            let result = try await work()
            finished(key)
            return result
        } catch {
            finished(key)
            throw error
        }
    }

    private func run(_ key: String, _ work: @escaping @Sendable () async -> Void) {
        Task {
            await work()
            finished(key)
        }
    }

    /// Gives `key`'s slot to the oldest queued build, or back.
    private func finished(_ key: String) {
        let next = state.withLock { state -> (key: String, work: @Sendable () async -> Void)? in
            state.pending.remove(key)
            guard !state.queued.isEmpty else {
                state.running -= 1
                return nil
            }
            return state.queued.removeFirst()
        }
        if let next { run(next.key, next.work) }
    }
}
