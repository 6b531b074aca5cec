import AviaryJSON
import ChannelSupport
import Locking
import Metrics
import RPC

/// The subscriptions open on this process, by user, for ``LiveHub``. Their number is the gauge
/// `aviary_subscriptions_active`.
final class LiveRegistry: Sendable {
    /// One open subscription: where to push, and the live events held back while it catches up.
    struct Entry {
        let connection: RPCConnection
        let id: String
        /// The sign-in session that opened it: the subscription ends when the session does.
        let session: Int64
        /// Non-nil while the subscription is held (``LiveHub/subscribe(_:connection:holding:)``).
        var held: [RawJSON]?
        /// Whether events were dropped while held (more than the hold limit arrived).
        var heldOverflowed = false
        /// After a hold: the live events to drop for a while, because the catch-up already sent them.
        var filter: LateEventFilter?
    }

    /// Keeps the live events a catch-up did not already send, until `until` (an event can be
    /// published a moment after the read that found it stored).
    struct LateEventFilter {
        let keep: @Sendable (RawJSON) -> Bool
        let until: ContinuousClock.Instant
    }

    private struct State {
        var users: [Int64: [Entry]] = [:]
        var count = 0
    }

    private let state = Locked(State())
    private let presence = Broadcast<LiveHub.PresenceChange>(bufferingPolicy: .bufferingNewest(4096))
    private let holdLimit: Int
    private let active = Gauge(label: "aviary_subscriptions_active")

    init(holdLimit: Int) {
        self.holdLimit = holdLimit
    }

    var count: Int { state.withLock { $0.count } }

    func isConnected(_ user: Int64) -> Bool {
        state.withLock { $0.users[user] != nil }
    }

    var connectedUsers: [Int64] {
        state.withLock { Array($0.users.keys) }
    }

    /// The subscriptions `user` holds on `connection`.
    func count(of user: Int64, on connection: RPCConnection) -> Int {
        state.withLock { state in state.users[user]?.count { $0.connection === connection } ?? 0 }
    }

    /// Whether `user` holds the subscription `id` on `connection`.
    func holds(user: Int64, connection: RPCConnection, id: String) -> Bool {
        state.withLock { state in state.users[user]?.contains { $0.connection === connection && $0.id == id } ?? false }
    }

    func add(user: Int64, session: Int64, connection: RPCConnection, id: String, holding: Bool) {
        let first = state.withLock { state in
            let first = state.users[user] == nil
            state.users[user, default: []].append(
                Entry(connection: connection, id: id, session: session, held: holding ? [] : nil))
            state.count += 1
            active.record(state.count)
            return first
        }
        if first { presence.yield(LiveHub.PresenceChange(userID: user, online: true)) }
    }

    func remove(user: Int64, connection: RPCConnection, id: String) {
        let last = state.withLock { state in
            guard var entries = state.users[user],
                let index = entries.firstIndex(where: { $0.connection === connection && $0.id == id })
            else { return false }
            entries.remove(at: index)
            state.count -= 1
            active.record(state.count)
            state.users[user] = entries.isEmpty ? nil : entries
            return entries.isEmpty
        }
        if last { presence.yield(LiveHub.PresenceChange(userID: user, online: false)) }
    }

    /// Whether to push `event` to one subscription now: false when it is gone, when a catch-up
    /// already sent the event, or when it is held (then the event is kept for later).
    func takes(_ event: RawJSON, user: Int64, connection: RPCConnection, id: String) -> Bool {
        state.withLock { state in
            guard var entries = state.users[user],
                let index = entries.firstIndex(where: { $0.connection === connection && $0.id == id })
            else { return false }
            defer { state.users[user] = entries }
            guard entries[index].held != nil else {
                guard let filter = entries[index].filter else { return true }
                if filter.until < .now {
                    entries[index].filter = nil
                    return true
                }
                return filter.keep(event)
            }
            if entries[index].held!.count < holdLimit {
                entries[index].held!.append(event)
            } else {
                entries[index].heldOverflowed = true
            }
            return false
        }
    }

    /// Ends the hold of one subscription: `deliver` runs under the lock with the held events, so no
    /// live event can overtake them; live events then pass through `filter` while it lasts. Nothing
    /// runs when the subscription is gone or not held.
    func release(
        user: Int64, connection: RPCConnection, id: String,
        filter: LateEventFilter?,
        _ deliver: (_ held: [RawJSON], _ overflowed: Bool) -> Void
    ) {
        state.withLock { state in
            guard var entries = state.users[user],
                let index = entries.firstIndex(where: { $0.connection === connection && $0.id == id }),
                let held = entries[index].held
            else { return }
            deliver(held, entries[index].heldOverflowed)
            entries[index].held = nil
            entries[index].heldOverflowed = false
            entries[index].filter = filter
            state.users[user] = entries
        }
    }

    /// The open subscriptions of any of `sessions`.
    func subscriptions(ofSessions sessions: Set<Int64>) -> [(RPCConnection, String)] {
        state.withLock { state in
            state.users.values.flatMap { entries in
                entries.lazy.filter { sessions.contains($0.session) }.map { ($0.connection, $0.id) }
            }
        }
    }

    /// Every open subscription (for a resync notice).
    var all: [(RPCConnection, String)] {
        state.withLock { state in state.users.values.flatMap { $0.map { ($0.connection, $0.id) } } }
    }

    func presenceChanges() -> AsyncStream<LiveHub.PresenceChange> {
        presence.stream()
    }

    func finishPresence() {
        presence.finish()
    }
}
