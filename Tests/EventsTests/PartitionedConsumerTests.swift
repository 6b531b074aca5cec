import EventStreams
import Foundation
import Redis
import TestSupport
import Testing

/// Consumer groups that share a partitioned piece of work: where a new partitioning starts, and how
/// instances divide the partitions.
@Suite("Partitioned consumers", .timeLimit(.minutes(2)))
struct PartitionedConsumerTests {
    @Test func aGroupStartsWhereTheGroupItTakesOverFromStood() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("takeover")
        let key = RedisArgument(EventStream.key(topic: topic))
        let old = RedisArgument("\(fixture.prefix).old")
        try await withServices([fixture.relay()]) {
            try await fixture.append(numberedEvents(topic: topic, 0..<6))
            _ = try await eventually(timeout: .seconds(10)) { try await fixture.redis.send(["XLEN", key]).int == 6 }
        }
        // The old group took 0…3, acknowledged 0 and 1; 2 and 3 are pending on a consumer gone since.
        _ = try await fixture.redis.send(["XGROUP", "CREATE", key, old, "0"])
        let taken = try await fixture.redis.send(["XREADGROUP", "GROUP", old, "gone", "COUNT", "4", "STREAMS", key, ">"])
        let ids = (taken.array?[0].array?[1].array ?? []).compactMap { $0.array?[0] }
        _ = try await fixture.redis.send(["XACK", key, old] + ids.prefix(2).map { RedisArgument($0.bytes ?? []) })

        var options = EventStreamConsumer.Options()
        options.isPredecessor = { $0 == "\(fixture.prefix).old" }
        options.idleConsumerRetention = .milliseconds(200)
        options.claimInterval = .milliseconds(100)
        let inbox = Inbox()
        try await Task.sleep(for: .milliseconds(250))  // the old group's consumer idles past the retention
        try await withServices([fixture.consumer(topic: topic, group: "new", options: options) { inbox.add($0) }]) {
            #expect(await inbox.wait { $0.count >= 4 })
            // Gone once its consumers idled past the retention: it no longer holds the stream back.
            let destroyed = try await eventually(timeout: .seconds(10)) {
                let groups = try await fixture.redis.send(["XINFO", "GROUPS", key]).array ?? []
                return !groups.contains { $0.array?[1].string == "\(fixture.prefix).old" }
            }
            #expect(destroyed)
        }
        #expect(inbox.numbers == [2, 3, 4, 5])
        await fixture.shutdown()
    }

    @Test func instancesShareThePartitionsEvenly() async throws {
        let fixture = try await EventFixture.make()
        let members = (1...4).map { PartitionMembership(redis: fixture.redis, work: "\(fixture.prefix).work", member: "instance-\($0)") }
        // Each joins at its first question; then every one sees all four.
        for member in members { _ = await member.owns(0) }
        try await Task.sleep(for: .milliseconds(1100))
        var owners: [Int: Int] = [:]
        for partition in 0..<64 {
            var claimed: [Int] = []
            for (index, member) in members.enumerated() where await member.owns(partition) { claimed.append(index) }
            #expect(claimed.count == 1, "partition \(partition) is owned by \(claimed)")
            if let owner = claimed.first { owners[owner, default: 0] += 1 }
        }
        // 64 partitions over 4 members: 16 each.
        #expect(owners == [0: 16, 1: 16, 2: 16, 3: 16], "\(owners)")
        await fixture.shutdown()
    }
}
