import Locking

/// Keeps callers from waiting on a server that does not answer (Redis, Postgres). Once a request
/// has gone unanswered (it timed out, or the server could not be reached), the client leaves the
/// server alone for `pause`: requests are refused at once instead of queueing behind a stalled
/// server or a connect that will fail, so the callers' fallbacks answer in microseconds rather than
/// after a timeout. Then one request goes through as a probe; whatever answer it gets (an error
/// reply included) closes the breaker, a failure to be answered opens it for another `pause`.
public final class CircuitBreaker: Sendable {
    private struct State {
        /// While set, requests are refused until then, and then one probes.
        var openUntil: ContinuousClock.Instant?
        var probing = false
    }

    private enum Admission { case pass, probe, refused(left: Duration) }

    private let pause: Duration
    private let state = Locked(State())

    public init(pause: Duration) {
        self.pause = pause
    }

    /// Lets a request through, returning true when it is the probe; while the breaker is open,
    /// throws what `refusal` makes of the time left before the next probe.
    public func admit<Failure: Error>(refusal: (_ left: Duration) -> Failure) throws(Failure) -> Bool {
        let admission = state.withLock { state -> Admission in
            guard let openUntil = state.openUntil else { return .pass }
            let now = ContinuousClock.now
            guard now >= openUntil, !state.probing else { return .refused(left: max(.zero, now.duration(to: openUntil))) }
            state.probing = true
            return .probe
        }
        switch admission {
        case .pass: return false
        case .probe: return true
        case .refused(let left): throw refusal(left)
        }
    }

    /// Closes the breaker: the server answered a request made past it (a readiness check).
    public func heardFromServer() {
        state.withLock { $0.openUntil = nil }
    }

    /// Records the outcome of a request that was let through: `unanswered` when the server could
    /// not be reached or did not answer in time.
    public func record(unanswered: Bool, probe: Bool) {
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
