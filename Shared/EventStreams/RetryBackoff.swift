import ServiceLifecycle

/// Exponentially growing pauses between retries: `initial`, twice that, … up to `maximum`.
package struct RetryBackoff {
    let initial: Duration
    let maximum: Duration
    /// Failures since the last success.
    package private(set) var failures = 0

    package init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = maximum
    }

    /// Counts a failure and returns how long to wait before the next attempt.
    package mutating func next() -> Duration {
        failures += 1
        // Capping the exponent keeps the multiplication from overflowing after many failures.
        return min(initial * (1 << min(failures - 1, 20)), maximum)
    }

    /// Whether the latest failure deserves a log line: the first, then every 20th, so that a long
    /// outage writes a line now and then rather than one per retry.
    package var isWorthLogging: Bool {
        failures == 1 || (failures > 0 && failures.isMultiple(of: 20))
    }

    package mutating func reset() {
        failures = 0
    }
}

/// Sleeps for `duration`, returning early when the task is cancelled or its service group begins a
/// graceful shutdown, so a back-off never delays stopping.
package func pauseUnlessStopping(for duration: Duration) async {
    try? await cancelWhenGracefulShutdown {
        try await Task.sleep(for: duration)
    }
}

/// Whether the calling service should stop: its task is cancelled or a graceful shutdown began.
package var serviceIsStopping: Bool {
    Task.isCancelled || Task.isShuttingDownGracefully
}
