import Synchronization

/// Ids the accounts service recently confirmed, so that following a popular user does not ask it
/// every time. Only existence is remembered, never its absence (a new account must be followable
/// at once), and only for `lifetime`, so memory stays bounded by `capacity` entries.
final class KnownUsers: Sendable {
    private let seen = Mutex<[Int64: ContinuousClock.Instant]>([:])
    private let capacity: Int
    private let lifetime: Duration

    init(capacity: Int = 100_000, lifetime: Duration = .seconds(300)) {
        self.capacity = capacity
        self.lifetime = lifetime
    }

    /// Whether `id` was confirmed within `lifetime`.
    func contains(_ id: Int64) -> Bool {
        guard let confirmed = seen.withLock({ $0[id] }) else { return false }
        return confirmed.duration(to: .now) < lifetime
    }

    /// Remembers that `ids` exist.
    func insert(_ ids: some Sequence<Int64>) {
        let now = ContinuousClock.now
        let lifetime = self.lifetime
        let capacity = self.capacity
        seen.withLock { seen in
            for id in ids {
                if seen.count >= capacity {
                    seen = seen.filter { $0.value.duration(to: now) < lifetime }
                    // Still full of fresh entries: start over rather than grow.
                    if seen.count >= capacity { seen.removeAll(keepingCapacity: true) }
                }
                seen[id] = now
            }
        }
    }
}
