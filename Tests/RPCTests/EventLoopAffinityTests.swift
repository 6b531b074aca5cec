import ChannelSupport
import NIOCore
import NIOPosix
import Testing

@Suite("Event-loop affinity of pooled connections")
struct EventLoopAffinityTests {
    @Test func aCallerOnALoopGetsTheSlotsOfThatLoopInTurn() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let affinity = EventLoopAffinity(group: group)
        for (index, loop) in affinity.loops.enumerated() {
            let picks = try await loop.submit { (0..<6).map { affinity.slot(from: $0, of: 5) } }.get()
            #expect(picks.allSatisfy { $0 % 2 == index }, "loop \(index) got slots \(picks)")
            #expect(Set(picks).count > 1, "the loop's slots are taken in turn")
            #expect(affinity.loop(forSlot: index) === loop)
            #expect(affinity.loop(forSlot: index + 2) === loop)
        }
        try await group.shutdownGracefully()
    }

    @Test func offTheLoopsOrWithoutASlotOnThemSlotsGoInTurn() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let affinity = EventLoopAffinity(group: group)
        #expect((0..<4).map { affinity.slot(from: $0, of: 3) } == [0, 1, 2, 0])
        // One slot for two loops: the second loop's callers share it.
        let second = affinity.loops[1]
        #expect(try await second.submit { affinity.slot(from: 0, of: 1) }.get() == 0)
        try await group.shutdownGracefully()
    }
}
