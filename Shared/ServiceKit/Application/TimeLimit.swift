/// What `body` returns, unless `limit` passes first: `body` is then cancelled and `expired()` is
/// thrown. For conversations with servers outside (mail, push services) that must not hold a job
/// forever, however they stall.
public func withTimeLimit<T: Sendable>(
    _ limit: Duration, expired: @escaping @Sendable () -> any Error, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw expired()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        return first
    }
}
