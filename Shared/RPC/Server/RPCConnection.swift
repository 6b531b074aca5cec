import AviaryJSON
import Foundation
import Locking
import NIOCore

/// A client's connection as handlers see it: for subscriptions, which push notifications on it
/// and are cancelled when it closes.
public final class RPCConnection: Sendable {
    private struct State {
        var subscriptions: [String: @Sendable () -> Void] = [:]
        var closed = false
        var nextSubscription: UInt64 = 1
        /// Bytes pushed since the socket last was under its high-water mark.
        var backlogBytes = 0
        /// The peer was judged too slow: the connection is closing.
        var dropped = false
    }

    private let channel: any Channel
    private let state = Locked(State())
    /// How many bytes may be pushed past the socket's high-water mark (64 KiB) before the peer is
    /// judged too slow and disconnected, so that one stalled reader holds at most that much of the
    /// server's memory. Counted in bytes, not pushes: a catch-up of a thousand missed events is
    /// written in one go, passes the mark at once without the peer being slow, and must fit.
    private let maxBacklogBytes: Int

    /// The peer's IP address, for per-address limits.
    public let remoteAddress: String?

    init(channel: any Channel, maxBacklogBytes: Int = 8 << 20) {
        self.channel = channel
        self.maxBacklogBytes = maxBacklogBytes
        self.remoteAddress = channel.remoteAddress?.ipAddress
    }

    public var isActive: Bool { channel.isActive }

    /// Sends a notification (`method`, `params`) to the peer. Returns false when the connection is
    /// closed, or is being closed because the peer stopped reading.
    @discardableResult
    public func push(method: String, params: RawJSON) -> Bool {
        var frame = ResponseEncoding.notification(method: method, params: params)
        frame.append(UInt8(ascii: "\n"))
        let tooSlow = state.withLock { state -> Bool? in
            if state.closed || state.dropped { return nil }
            if channel.isWritable {
                state.backlogBytes = 0
                return false
            }
            state.backlogBytes += frame.count
            state.dropped = state.backlogBytes > maxBacklogBytes
            return state.dropped
        }
        guard let tooSlow else { return false }
        if tooSlow {
            // Later, not from here: closing runs the subscriptions' cancellations at once, and the
            // caller may be inside their lock (a catch-up delivering held events).
            let channel = channel
            channel.eventLoop.execute { channel.close(promise: nil) }
            return false
        }
        channel.writeAndFlush(ByteBuffer(bytes: frame), promise: nil)
        return true
    }

    /// Registers a subscription whose `cancel` runs when it is ended or the connection closes.
    /// Returns its id, or nil when the connection is already closed (then `cancel` has run).
    public func addSubscription(cancel: @escaping @Sendable () -> Void) -> String? {
        let id: String? = state.withLock { state in
            guard !state.closed else { return nil }
            let id = String(state.nextSubscription)
            state.nextSubscription += 1
            state.subscriptions[id] = cancel
            return id
        }
        if id == nil { cancel() }
        return id
    }

    /// Ends one subscription; false when it does not exist on this connection.
    public func cancelSubscription(_ id: String) -> Bool {
        guard let cancel = state.withLock({ $0.subscriptions.removeValue(forKey: id) }) else { return false }
        cancel()
        return true
    }

    public var subscriptionCount: Int { state.withLock { $0.subscriptions.count } }

    func closed() {
        let cancels = state.withLock { state in
            state.closed = true
            defer { state.subscriptions = [:] }
            return Array(state.subscriptions.values)
        }
        for cancel in cancels { cancel() }
    }
}
