import ChannelSupport
import Locking
import Logging
import NIOCore
import NIOPosix

/// The client's connections. Up to `poolSize` shared ones, each carrying many callers' commands at
/// once (opened when every open one is busy, replaced when found closed), spread over the event
/// loops so that a caller gets one on its own loop when it can; and connections
/// lent whole to blocking commands (`BLPOP`, `XREADGROUP … BLOCK`), which would hold up everyone
/// else on a shared one. Up to `poolSize` of those are kept idle for the next blocking command.
final class RedisConnectionPool: Sendable {
    private enum Slot {
        case empty
        case connecting(Task<RedisChannelConnection, any Error>)
        case open(RedisChannelConnection)
    }

    private struct State {
        var slots: [Slot]
        var idleDedicated: [RedisChannelConnection] = []
        var isClosed = false
    }

    private let configuration: RedisConfiguration
    private let logger: Logger
    private let state: Locked<State>
    private let affinity = EventLoopAffinity(group: MultiThreadedEventLoopGroup.singleton)

    /// A caller on a connection's event loop joins the requests written to it in the same tick
    /// (they leave in one `write(2)`, and Redis reads them in one go: far cheaper for both sides than
    /// a write and a read per connection) while the connection has fewer commands than this in
    /// flight; behind more, the caller would wait.
    static let gatheringLimit = 64

    init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.state = Locked(State(slots: Array(repeating: .empty, count: configuration.poolSize)))
    }

    /// A shared connection, on the caller's event loop when a slot is: one gathering a batch in this
    /// tick (see `gatheringLimit`), else one that is idle, else a new one while there is room, else
    /// the least busy. A connection found closed is replaced.
    func shared() async throws -> RedisChannelConnection {
        let affinity = self.affinity
        let (index, slot) = try state.withLock { state throws(RedisError) -> (Int, Slot) in
            guard !state.isClosed else { throw RedisError(.closed) }
            // The slots of the caller's loop (every loops.count-th), or all of them when none is.
            let count = state.slots.count
            let current = affinity.currentLoopIndex()
            let onLoop = current.map { $0 < count } ?? false
            let candidates =
                if let current, onLoop {
                    stride(from: current, to: count, by: affinity.loops.count)
                } else {
                    stride(from: 0, to: count, by: 1)
                }
            var leastBusy: (index: Int, load: Int)?
            var gathering: Int?
            var empty: Int?
            var connecting: Int?
            for index in candidates {
                switch state.slots[index] {
                case .open(let connection) where !connection.isActive:
                    state.slots[index] = .empty
                    if empty == nil { empty = index }
                case .open(let connection):
                    let load = connection.load
                    if load < leastBusy?.load ?? .max { leastBusy = (index, load) }
                    if onLoop, gathering == nil, load < Self.gatheringLimit, connection.isGathering { gathering = index }
                case .empty:
                    if empty == nil { empty = index }
                case .connecting:
                    if connecting == nil { connecting = index }
                }
            }
            if let gathering { return (gathering, state.slots[gathering]) }
            if let leastBusy, leastBusy.load == 0 { return (leastBusy.index, state.slots[leastBusy.index]) }
            if let empty {
                let loop = affinity.loop(forSlot: empty)
                state.slots[empty] = .connecting(Task { try await self.open(on: loop) })
                return (empty, state.slots[empty])
            }
            if let leastBusy { return (leastBusy.index, state.slots[leastBusy.index]) }
            // Every candidate is still connecting (there is at least one slot): wait for one.
            guard let index = connecting else { preconditionFailure("a pool has at least one slot") }
            return (index, state.slots[index])
        }
        switch slot {
        case .open(let connection):
            return connection
        case .connecting(let task):
            do {
                let connection = try await task.value
                let keep = state.withLock { state in
                    if case .connecting(let current) = state.slots[index], current == task {
                        state.slots[index] = state.isClosed ? .empty : .open(connection)
                    }
                    return !state.isClosed
                }
                if !keep { connection.close() }
                return connection
            } catch {
                state.withLock { state in
                    if case .connecting(let current) = state.slots[index], current == task { state.slots[index] = .empty }
                }
                throw error
            }
        case .empty:
            preconditionFailure("a slot is never left empty for its caller")
        }
    }

    /// A connection for the caller alone; give it back with `release`.
    func leaseDedicated() async throws -> RedisChannelConnection {
        let idle = try state.withLock { state throws(RedisError) -> RedisChannelConnection? in
            guard !state.isClosed else { throw RedisError(.closed) }
            while let connection = state.idleDedicated.popLast() {
                if connection.isActive { return connection }
            }
            return nil
        }
        if let idle { return idle }
        return try await open(on: MultiThreadedEventLoopGroup.currentEventLoop ?? MultiThreadedEventLoopGroup.singleton.next())
    }

    /// Takes back a dedicated connection: kept for the next blocking command when it is still open
    /// and there is room, closed otherwise.
    func release(_ connection: RedisChannelConnection) {
        let kept = state.withLock { state in
            guard !state.isClosed, connection.isActive, state.idleDedicated.count < configuration.poolSize else {
                return false
            }
            state.idleDedicated.append(connection)
            return true
        }
        if !kept { connection.close() }
    }

    /// Fails later requests with `.closed` and closes every connection once its requests in flight
    /// are answered (each within the command timeout). Returns when they have closed.
    func close() async {
        for connection in beginClosing() {
            try? await connection.closed.get()
        }
    }

    /// The part of ``close()`` that does not wait: returns the connections being closed.
    @discardableResult
    func beginClosing() -> [RedisChannelConnection] {
        let connections = state.withLock { state -> [RedisChannelConnection] in
            state.isClosed = true
            var connections = state.idleDedicated
            state.idleDedicated = []
            for (index, slot) in state.slots.enumerated() {
                if case .open(let connection) = slot { connections.append(connection) }
                state.slots[index] = .empty
            }
            return connections
        }
        for connection in connections { connection.closeWhenIdle() }
        return connections
    }

    private func open(on loop: any EventLoop) async throws -> RedisChannelConnection {
        let connection = try await RedisChannelConnection.connect(configuration, group: loop)
        logger.debug("Opened a Redis connection")
        return connection
    }
}
