import Foundation
import NIOCore
import Synchronization

/// A client's connection as handlers see it: for subscriptions, which push notifications on it
/// and are cancelled when it closes.
public final class RPCConnection: Sendable {
    private struct State {
        var subscriptions: [String: @Sendable () -> Void] = [:]
        var closed = false
        var nextSubscription: UInt64 = 1
        var backlogStrikes = 0
    }

    private let channel: any Channel
    private let state = Mutex(State())
    /// How many pushes may find the socket over its high-water mark in a row before the peer is
    /// judged too slow and disconnected, so one stalled reader cannot grow the server's memory.
    private let maxBacklogStrikes: Int

    /// The peer's IP address, for per-address limits.
    public let remoteAddress: String?

    init(channel: any Channel, maxBacklogStrikes: Int = 512) {
        self.channel = channel
        self.maxBacklogStrikes = maxBacklogStrikes
        self.remoteAddress = channel.remoteAddress?.ipAddress
    }

    public var isActive: Bool { channel.isActive }

    /// Sends a notification (`method`, `params`) to the peer. Returns false when the connection is
    /// closed, or is being closed because the peer stopped reading.
    @discardableResult
    public func push(method: String, params: RawJSON) -> Bool {
        let tooSlow = state.withLock { state -> Bool? in
            if state.closed { return nil }
            if channel.isWritable {
                state.backlogStrikes = 0
            } else {
                state.backlogStrikes += 1
            }
            return state.backlogStrikes > maxBacklogStrikes
        }
        guard let tooSlow else { return false }
        if tooSlow {
            channel.close(promise: nil)
            return false
        }
        var frame = ResponseEncoding.notification(method: method, params: params)
        frame.append(UInt8(ascii: "\n"))
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
