/// Checks `condition` every `interval` until it holds (true) or `timeout` has passed (false).
public func eventually(
    timeout: Duration = .seconds(10), interval: Duration = .milliseconds(20), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}
