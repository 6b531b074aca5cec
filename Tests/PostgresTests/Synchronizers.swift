import Locking
import Synchronization

/// Holds concurrent transaction bodies until `parties` of them have arrived (or five seconds pass,
/// so that a failing test cannot hang).
final class Barrier: Sendable {
    private let parties: Int
    private let arrived = Locked(0)

    init(parties: Int) {
        self.parties = parties
    }

    func arriveAndWait() async {
        arrived.withLock { $0 += 1 }
        let deadline = ContinuousClock.now + .seconds(5)
        while arrived.withLock({ $0 }) < parties, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }
}

/// A count shared by concurrent transaction bodies.
final class Counter: Sendable {
    private let count = Atomic(0)

    var value: Int { count.load(ordering: .relaxed) }

    func increment() -> Int {
        count.wrappingAdd(1, ordering: .relaxed).newValue
    }
}

/// Holds a pooled connection until the test opens it, so that tests about a busy pool do not depend
/// on timing.
final class Gate: Sendable {
    private let isOpen = Atomic(false)
    private let isEntered = Atomic(false)

    /// Called while holding a connection: marks the gate entered, then waits until `open()` (or ten
    /// seconds pass).
    func enterAndWait() async {
        isEntered.store(true, ordering: .releasing)
        let deadline = ContinuousClock.now + .seconds(10)
        while !isOpen.load(ordering: .acquiring), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Waits until a connection holder has entered.
    func waitUntilEntered() async throws {
        while !isEntered.load(ordering: .acquiring) {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    func open() {
        isOpen.store(true, ordering: .releasing)
    }
}
