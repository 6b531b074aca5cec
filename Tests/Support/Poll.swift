/// Checks `condition` every `interval` until it holds (true) or `timeout` has passed (false).
func poll(
    timeout: Duration, interval: Duration = .milliseconds(50), until condition: () async -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}
