import Synchronization

/// How many WebSockets each user holds on this instance, so that one user cannot hold them all
/// (`AVIARY_GATEWAY_SOCKETS_PER_USER`).
final class SocketRegistry: Sendable {
    private let counts = Mutex<[Int64: Int]>([:])
    let limitPerUser: Int

    init(limitPerUser: Int) {
        self.limitPerUser = limitPerUser
    }

    /// Counts one more socket for `user`; false (nothing counted) when the user holds the limit.
    func claim(_ user: Int64) -> Bool {
        counts.withLock { counts in
            let held = counts[user, default: 0]
            guard held < limitPerUser else { return false }
            counts[user] = held + 1
            return true
        }
    }

    /// Whether `user` holds the limit already.
    func isFull(_ user: Int64) -> Bool {
        counts.withLock { $0[user, default: 0] >= limitPerUser }
    }

    func release(_ user: Int64) {
        counts.withLock { counts in
            let left = counts[user, default: 1] - 1
            counts[user] = left > 0 ? left : nil
        }
    }
}
