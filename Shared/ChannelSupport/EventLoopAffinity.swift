import NIOCore
import NIOPosix

/// Lets a connection pool hand each caller a connection on the event loop the caller runs on.
///
/// Calls run on their event loop (a task executor preference), so a connection on another loop
/// costs two thread hops per request: one to write, one to resume the caller with the answer. Pools
/// spread their slots over the group's loops in turn (`loop(forSlot:)`) and take, in turn, the
/// slots of the caller's loop (`slot(from:of:)`).
public struct EventLoopAffinity: Sendable {
    public let loops: [any EventLoop]

    public init(group: any EventLoopGroup) {
        loops = Array(group.makeIterator())
    }

    /// The loop a pool's slot `slot` connects on.
    public func loop(forSlot slot: Int) -> any EventLoop {
        loops[slot % loops.count]
    }

    /// The position among `loops` of the loop the caller runs on; nil off the group's loops.
    public func currentLoopIndex() -> Int? {
        guard let current = MultiThreadedEventLoopGroup.currentEventLoop else { return nil }
        return loops.firstIndex { $0 === current }
    }

    /// The first slot, counting from `start` in turn among `count` slots, that connects on the
    /// caller's loop; `start` (wrapped) when the caller is off the loops or no slot is on its loop.
    public func slot(from start: Int, of count: Int) -> Int {
        let first = start % count
        guard let current = currentLoopIndex() else { return first }
        for offset in 0..<count {
            let slot = (first + offset) % count
            if slot % loops.count == current { return slot }
        }
        return first
    }
}
