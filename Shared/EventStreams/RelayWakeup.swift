import Locking

/// Lets `OutboxRelay.nudge()` cut a relay's idle wait short. A signal that arrives while the relay
/// is busy is remembered, so the next wait ends at once and no nudge is lost.
final class RelayWakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Locked(State())

    /// Ends the current wait, or the next one if none is in progress.
    func signal() {
        let waiter = state.withLock { state in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil as CheckedContinuation<Void, Never>?
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Waits until a signal, `timeout`, or cancellation, whichever comes first.
    func wait(upTo timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.nextSignal() }
            await group.next()
            group.cancelAll()
        }
    }

    private func nextSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    // Checked under the lock: a cancellation handler that ran before this found no waiter.
                    // Either way the relay runs a batch next, which is what a pending signal asks for.
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }?.resume()
        }
    }
}

/// The relays running in this process, for `OutboxRelay.nudge()`.
final class RelayWakeups: Sendable {
    static let shared = RelayWakeups()

    private let wakeups = Locked<[ObjectIdentifier: RelayWakeup]>([:])

    func register(_ wakeup: RelayWakeup) {
        wakeups.withLock { $0[ObjectIdentifier(wakeup)] = wakeup }
    }

    func unregister(_ wakeup: RelayWakeup) {
        wakeups.withLock { $0[ObjectIdentifier(wakeup)] = nil }
    }

    func signalAll() {
        for wakeup in wakeups.withLock({ Array($0.values) }) { wakeup.signal() }
    }
}
