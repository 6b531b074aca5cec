import Synchronization

/// Keeps callers from waiting on a Redis that does not answer. Once a command has timed out or
/// could not reach the server, the client leaves Redis alone for `pause`: commands fail at once
/// with `.connectionFailed` instead of queueing behind a stalled server or a connect that will
/// fail, so the callers' fallbacks answer in microseconds rather than after the command timeout.
/// Then one command goes through as a probe; whatever answer it gets (an error reply included)
/// closes the breaker, a failure to be answered opens it for another `pause`.
final class RedisBreaker: Sendable {
    private struct State {
        /// While set, commands are refused until then, and then one probes.
        var openUntil: ContinuousClock.Instant?
        var probing = false
    }

    private let pause: Duration
    private let state = Mutex(State())

    init(pause: Duration) {
        self.pause = pause
    }

    /// Lets a command through, or throws `.connectionFailed` while the breaker is open. True when
    /// the command is the probe.
    func admit() throws(RedisError) -> Bool {
        try state.withLock { state throws(RedisError) -> Bool in
            guard let openUntil = state.openUntil else { return false }
            let now = ContinuousClock.now
            guard now >= openUntil, !state.probing else {
                let left = max(.zero, now.duration(to: openUntil))
                throw RedisError(
                    .connectionFailed, detail: "Redis did not answer lately; not tried again for \(left) (or until a probe is answered)")
            }
            state.probing = true
            return true
        }
    }

    /// Records the outcome of a command that was let through: `unanswered` when Redis could not
    /// be reached or did not answer in time.
    func record(unanswered: Bool, probe: Bool) {
        state.withLock { state in
            if probe { state.probing = false }
            if unanswered {
                state.openUntil = .now + pause
            } else if probe || state.openUntil == nil {
                state.openUntil = nil
            }
        }
    }
}
