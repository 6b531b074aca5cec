import Foundation
import Locking
import ServiceKit
import Testing

@Suite("SnowflakeGenerator")
struct SnowflakeGeneratorTests {
    /// A clock the test moves by hand; every read can also advance it.
    final class ManualClock: Sendable {
        private let state: Locked<(now: Int64, reads: Int)>
        private let advanceAfterReads: Int?

        init(_ now: Int64, advanceAfterReads: Int? = nil) {
            self.state = Locked((now, 0))
            self.advanceAfterReads = advanceAfterReads
        }

        func set(_ now: Int64) { self.state.withLock { $0.now = now } }

        func read() -> Int64 {
            self.state.withLock { state in
                state.reads += 1
                if let limit = self.advanceAfterReads, state.reads > limit { state.now += 1 }
                return state.now
            }
        }
    }

    static let start = SnowflakeGenerator.epochMilliseconds + 86_400_000

    @Test func layoutAndTimestamp() {
        let generator = SnowflakeGenerator(nodeID: 513, clock: { Self.start })
        let first = generator.next()
        let second = generator.next()
        #expect(first == (86_400_000 << 22) | (513 << 12))
        #expect(second == first + 1)
        #expect(SnowflakeGenerator.nodeID(of: first) == 513)
        #expect(SnowflakeGenerator.timestamp(of: first) == Date(timeIntervalSince1970: Double(Self.start) / 1000))
        #expect(SnowflakeGenerator.epoch == ISO8601DateFormatter().date(from: "2026-01-01T00:00:00Z"))
    }

    @Test func wallClockIdsCarryTheirTime() {
        let generator = SnowflakeGenerator(nodeID: 1)
        let before = Date()
        let id = generator.next()
        let stamped = SnowflakeGenerator.timestamp(of: id)
        #expect(abs(stamped.timeIntervalSince(before)) < 1)
        #expect(id > 0)
    }

    @Test func sequenceOverflowWaitsForTheNextMillisecond() {
        // The clock stays put for the 4,097 reads of the first 4,097 ids, then moves on.
        let clock = ManualClock(Self.start, advanceAfterReads: 4097)
        let generator = SnowflakeGenerator(nodeID: 7, clock: clock.read)
        let ids = (0..<4097).map { _ in generator.next() }
        #expect(ids[4095] & 0xFFF == 4095)
        #expect(SnowflakeGenerator.timestamp(of: ids[4095]) == SnowflakeGenerator.timestamp(of: ids[0]))
        #expect(ids[4096] & 0xFFF == 0)
        #expect(ids[4096] >> 22 == (ids[0] >> 22) + 1, "one millisecond later")
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func clockGoingBackwardsNeverLowersIds() {
        let clock = ManualClock(Self.start)
        let generator = SnowflakeGenerator(nodeID: 3, clock: clock.read)
        let before = generator.next()
        clock.set(Self.start - 5_000)
        var ids = [before]
        // More than one millisecond's worth while the clock is behind: the sequence rolls over
        // into the following millisecond instead of waiting five seconds.
        for _ in 0..<5000 { ids.append(generator.next()) }
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
        #expect(SnowflakeGenerator.timestamp(of: ids[4095]) == SnowflakeGenerator.timestamp(of: before))
        #expect(ids[4096] >> 22 == (before >> 22) + 1, "one millisecond later")
        clock.set(Self.start + 10)
        let later = generator.next()
        #expect(later > ids.last!)
        #expect(later & 0xFFF == 0)
    }

    @Test func uniqueAndOrderedUnderConcurrency() async {
        let generator = SnowflakeGenerator(nodeID: 1023)
        let perTask = 50_000
        let batches = await withTaskGroup(of: [Int64].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var ids: [Int64] = []
                    ids.reserveCapacity(perTask)
                    for _ in 0..<perTask { ids.append(generator.next()) }
                    return ids
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for batch in batches {
            #expect(zip(batch, batch.dropFirst()).allSatisfy { $0 < $1 }, "each caller sees increasing ids")
        }
        let all = batches.flatMap { $0 }
        #expect(all.count == 8 * perTask)
        #expect(Set(all).count == all.count, "no id is issued twice")
        #expect(all.allSatisfy { SnowflakeGenerator.nodeID(of: $0) == 1023 })
    }
}
