import Locking
import RPC
import TestSupport

/// Collects a connection's pushes from one long-lived task, so that a test can wait for some with a
/// timeout without cancelling the read (cancelling it would end the connection's stream).
final class PushInbox: Sendable {
    /// The pushes not taken yet, shared with the reading task.
    private final class Received: Sendable {
        let items = Locked<[RPCNotification]>([])
    }

    private let received = Received()
    private let reader: Task<Void, Never>

    init(_ notifications: AsyncStream<RPCNotification>) {
        let received = self.received
        reader = Task {
            for await notification in notifications {
                received.items.withLock { $0.append(notification) }
            }
        }
    }

    deinit { reader.cancel() }

    /// The next `count` pushes, or fewer when they do not all come `within`.
    func take(_ count: Int, within timeout: Duration) async -> [RPCNotification] {
        _ = await eventually(timeout: timeout, interval: .milliseconds(2)) { received.items.withLock { $0.count >= count } }
        return received.items.withLock { received in
            let taken = Array(received.prefix(count))
            received.removeFirst(taken.count)
            return taken
        }
    }
}
