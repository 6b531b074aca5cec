import Locking
import Logging

/// What profile reads know about a service they ask (social-graph, tweets) being down. After it cannot
/// be reached, reads skip it for
/// `pause` instead of each paying for another attempt (a connection that is refused, or a timeout),
/// then try again; and the warning is logged at most once per `warningInterval`, with how many
/// failures it stands for, so an outage does not flood the log with a line per read.
final class PeerOutage: Sendable {
    private struct State {
        var skipUntil: ContinuousClock.Instant?
        var lastWarning: ContinuousClock.Instant?
        var unlogged = 0
    }

    /// The service asked, and what profiles go without while it is down, for the warning.
    private let service: String
    private let missing: String
    private let pause: Duration
    private let warningInterval: Duration
    private let state = Locked(State())

    init(service: String, missing: String, pause: Duration, warningInterval: Duration) {
        self.service = service
        self.missing = missing
        self.pause = pause
        self.warningInterval = warningInterval
    }

    /// Whether a call may be tried now.
    var allowsCall: Bool {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let until = state.skipUntil, now < until else { return true }
            state.unlogged += 1
            return false
        }
    }

    /// Records a failed call; logs it unless a warning went out recently. `unreachable` (no instance
    /// answered) starts a pause; an error answer, or a budget the caller cut short, does not.
    func failed(method: String, unreachable: Bool, error: @autoclosure () -> String, logger: Logger) {
        let now = ContinuousClock.now
        let unlogged: Int? = state.withLock { state in
            if unreachable { state.skipUntil = now.advanced(by: pause) }
            if let last = state.lastWarning, last.duration(to: now) < warningInterval {
                state.unlogged += 1
                return nil
            }
            defer {
                state.lastWarning = now
                state.unlogged = 0
            }
            return state.unlogged
        }
        guard let unlogged else { return }
        var metadata: Logger.Metadata = ["peer.method": "\(method)", "error": "\(error())"]
        if unlogged > 0 { metadata["reads.degraded.unlogged"] = "\(unlogged)" }
        logger.warning("\(service) did not answer; serving profiles without \(missing)", metadata: metadata)
    }
}
