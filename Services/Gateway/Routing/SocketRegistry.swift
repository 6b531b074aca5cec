import Locking

/// How many WebSockets each user, or each client address, holds on this instance, so that one of
/// them cannot hold them all (`AVIARY_GATEWAY_SOCKETS_PER_USER`, `…_PER_ADDRESS`).
final class SocketRegistry<Key: Hashable & Sendable>: Sendable {
    private let counts = Locked<[Key: Int]>([:])
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts one more socket for `key`; false (nothing counted) when it holds the limit.
    func claim(_ key: Key) -> Bool {
        counts.withLock { counts in
            let held = counts[key, default: 0]
            guard held < limit else { return false }
            counts[key] = held + 1
            return true
        }
    }

    /// Whether `key` holds the limit already.
    func isFull(_ key: Key) -> Bool {
        counts.withLock { $0[key, default: 0] >= limit }
    }

    func release(_ key: Key) {
        counts.withLock { counts in
            let left = counts[key, default: 1] - 1
            counts[key] = left > 0 ? left : nil
        }
    }
}
