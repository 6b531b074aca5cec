import AviaryJSON
import Foundation
import Locking

/// Issues unique, time-ordered 64-bit ids: 41 bits of milliseconds since ``SnowflakeGenerator/epoch``,
/// 10 bits of node id, 12 bits of sequence.
///
/// Ids from one generator strictly increase. Ids from different nodes never collide as long as each
/// running process has its own node id (``ServiceConfiguration/nodeID``).
public final class SnowflakeGenerator: Sendable {
    /// 2026-01-01T00:00:00Z, the zero of the timestamp bits, in milliseconds since 1970.
    public static let epochMilliseconds: Int64 = 1_767_225_600_000
    /// 2026-01-01T00:00:00Z, the zero of the timestamp bits.
    public static let epoch = Date(timeIntervalSince1970: TimeInterval(epochMilliseconds) / 1000)
    /// The largest node id (10 bits).
    public static let maxNodeID = 1023

    static let sequenceBits = 12
    static let nodeBits = 10
    static let maxSequence: Int64 = (1 << sequenceBits) - 1

    private struct State {
        var lastMilliseconds: Int64 = -1
        var sequence: Int64 = 0
    }

    /// The node id placed in every id this generator issues.
    public let nodeID: Int
    private let clock: @Sendable () -> Int64
    private let state = Locked(State())

    /// Creates a generator for one node.
    /// - Parameters:
    ///   - nodeID: 0…1023, unique among the processes issuing ids at the same time.
    ///   - clock: milliseconds since 1970; the wall clock unless a test needs to steer time.
    public init(
        nodeID: Int,
        clock: @escaping @Sendable () -> Int64 = SnowflakeGenerator.wallClockMilliseconds
    ) {
        precondition((0...Self.maxNodeID).contains(nodeID), "node id \(nodeID) is outside 0...1023")
        self.nodeID = nodeID
        self.clock = clock
    }

    /// Returns the next id, always larger than every id this generator issued before.
    ///
    /// When 4,096 ids were issued in the current millisecond, it waits for the next millisecond.
    /// When the clock goes backwards, it keeps counting on the last timestamp it used; if that
    /// millisecond is exhausted too, it moves on to the following one rather than wait for the
    /// clock to catch up.
    public func next() -> Int64 {
        self.state.withLock { state in
            var now = max(self.clock() - Self.epochMilliseconds, 0)
            if now > state.lastMilliseconds {
                state.lastMilliseconds = now
                state.sequence = 0
            } else if state.sequence < Self.maxSequence {
                state.sequence += 1
            } else {
                // This millisecond is spent: wait for the clock, unless it is behind us.
                while now == state.lastMilliseconds {
                    now = max(self.clock() - Self.epochMilliseconds, 0)
                }
                state.lastMilliseconds = max(now, state.lastMilliseconds + 1)
                state.sequence = 0
            }
            return state.lastMilliseconds << (Self.nodeBits + Self.sequenceBits)
                | Int64(self.nodeID) << Self.sequenceBits
                | state.sequence
        }
    }

    /// The moment (to the millisecond) an id was issued.
    public static func timestamp(of id: Int64) -> Date {
        let milliseconds = (id >> (nodeBits + sequenceBits)) + epochMilliseconds
        return Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }

    /// The node id bits of an id.
    public static func nodeID(of id: Int64) -> Int {
        Int((id >> sequenceBits) & Int64(maxNodeID))
    }

    /// The current wall-clock time in milliseconds since 1970.
    @Sendable
    public static func wallClockMilliseconds() -> Int64 {
        Date().millisecondsSince1970
    }
}
