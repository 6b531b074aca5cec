import AviaryJSON
import EventStreams
import Foundation
import Locking
import RPC
import Redis
import TestSupport
import Testing

@Suite("Event stream consumer", .timeLimit(.minutes(2)))
struct EventStreamConsumerTests {
    struct HandlerFailure: Error {}

    @Test func entriesOfAKilledConsumerAreClaimedByAnother() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("claim")
        var options = EventStreamConsumer.Options()
        options.claimMinIdle = .milliseconds(300)
        options.claimInterval = .milliseconds(100)
        let (consumerA, seenByA, consumerB, inboxB) = stuckAndStandby(fixture, topic: topic, options: options)
        try await withServices([fixture.relay()]) {
            let runA = Task { try await consumerA.run() }
            try await fixture.append(numberedEvents(topic: topic, 0..<10))
            #expect(await seenByA.wait { !$0.isEmpty })
            runA.cancel()
            try await runA.value

            try await withServices([consumerB]) {
                #expect(await inboxB.wait { Set($0.map(\.outboxID)).count >= 10 })
            }
        }
        #expect(Set(inboxB.numbers) == Set(0..<10))
        let claimed = Set(seenByA.numbers)
        for event in inboxB.events {
            let n = event.event.payload["n"]?.intValue ?? -1
            #expect(event.deliveries == (claimed.contains(n) ? 2 : 1), "event \(n)")
        }
        #expect(try await pendingCount(fixture, topic: topic) == 0)
        await fixture.shutdown()
    }

    @Test func withALeaseOneConsumerAtATimeHandlesTheTopicInOrder() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("lease")
        var options = EventStreamConsumer.Options()
        options.leaseTime = .milliseconds(500)
        options.blockTimeout = .milliseconds(100)
        options.maxHandlerTime = .seconds(1)
        // A takes the lease and then a batch it does not finish in the longest time allowed; B stands
        // by until A gives the lease up, then claims what A left pending before it reads anything new.
        let (consumerA, seenByA, consumerB, inboxB) = stuckAndStandby(fixture, topic: topic, options: options)
        try await runAThenB(fixture, topic: topic, a: consumerA, aTook: seenByA, b: consumerB) {
            #expect(await inboxB.wait { $0.count >= 20 })
        }
        #expect(inboxB.numbers == Array(0..<20))
        #expect(try await pendingCount(fixture, topic: topic) == 0)
        await fixture.shutdown()
    }

    @Test func aSlowHandlerKeepsItsLeaseAndTheStandbyTakesNothing() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("slow")
        var options = EventStreamConsumer.Options()
        options.leaseTime = .seconds(1)
        options.blockTimeout = .milliseconds(100)
        // A's first batch takes three lease terms (calls waiting out their timeouts in an outage).
        let startedByA = Inbox()
        let inboxA = Inbox()
        let inboxB = Inbox()
        let consumerA = fixture.consumer(topic: topic, name: "a", options: options) { batch in
            startedByA.add(batch)
            if startedByA.events.count == batch.events.count { try await Task.sleep(for: .seconds(3)) }
            inboxA.add(batch)
        }
        let consumerB = fixture.consumer(topic: topic, name: "b", options: options) { inboxB.add($0) }
        try await runAThenB(fixture, topic: topic, a: consumerA, aTook: startedByA, b: consumerB) {
            #expect(await inboxA.wait { $0.count >= 20 })
            // B looks every 250 ms: long enough to have taken over had the lease lapsed.
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(inboxA.numbers == Array(0..<20))
        #expect(inboxA.events.allSatisfy { $0.deliveries == 1 })
        #expect(inboxB.events.isEmpty)
        #expect(try await pendingCount(fixture, topic: topic) == 0)
        await fixture.shutdown()
    }

    @Test func consumersLeftByEarlierProcessesAreRemovedUnlessTheyHoldEntries() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("consumers")
        let (key, group) = (RedisArgument(EventStream.key(topic: topic)), RedisArgument("\(fixture.prefix).group"))
        _ = try await fixture.redis.send(["XGROUP", "CREATE", key, group, "0", "MKSTREAM"])
        // An earlier process that read nothing, and one that holds an entry it never acknowledged.
        _ = try await fixture.redis.send(["XGROUP", "CREATECONSUMER", key, group, "gone-empty"])
        _ = try await fixture.redis.send(["XADD", key, "*", "type", "numbered"])
        _ = try await fixture.redis.send(["XREADGROUP", "GROUP", group, "gone-holding", "COUNT", "1", "STREAMS", key, ">"])
        var options = EventStreamConsumer.Options()
        options.idleConsumerRetention = .milliseconds(300)
        options.claimInterval = .milliseconds(100)
        options.claimMinIdle = .seconds(3600)
        func consumers() async throws -> Set<String> {
            let reply = try await fixture.redis.send(["XINFO", "CONSUMERS", key, group])
            return Set((reply.array ?? []).compactMap { $0.array?[1].string })
        }
        let tidied = try await withServices([fixture.consumer(topic: topic, name: "live", options: options) { _ in }]) {
            try await eventually(timeout: .seconds(10)) { try await consumers() == ["gone-holding", "live"] }
        }
        let left = try await consumers()
        #expect(tidied, "consumers: \(left)")
        await fixture.shutdown()
    }

    @Test func aLeaseIsRenewedOnceAFifthOfItHasPassedNotAtEveryRead() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("renewal")
        var options = EventStreamConsumer.Options()
        options.leaseTime = .seconds(2)
        options.blockTimeout = .milliseconds(20)
        let key = RedisArgument("aviary:events:lease:\(fixture.prefix).group:\(topic)")
        // Idle, the consumer reads every 20 ms; the lease's time to live shows when it was renewed.
        let lowest = try await withServices([fixture.consumer(topic: topic, options: options) { _ in }]) {
            #expect(await eventually(timeout: .seconds(10)) { ((try? await fixture.redis.send(["PTTL", key]).int) ?? -2) > 0 })
            var lowest = Int.max
            let end = ContinuousClock.now + .seconds(1.5)
            while ContinuousClock.now < end {
                lowest = min(lowest, try await fixture.redis.send(["PTTL", key]).int ?? -2)
                try await Task.sleep(for: .milliseconds(10))
            }
            return lowest
        }
        // Renewed at every read, it would never fall below about 1,980 ms; every 400 ms, it reaches about 1,600.
        #expect(lowest < 1800, "lowest time to live \(lowest) ms")
        #expect(lowest > 1000, "lowest time to live \(lowest) ms")
        await fixture.shutdown()
    }

    @Test func aLoneEventIsHandledAtOnceAndSeveralStartAGather() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("gather")
        var options = EventStreamConsumer.Options()
        // Far longer than the appends below take, even on a loaded machine.
        options.gatherDelay = .seconds(5)
        let inbox = Inbox()
        let batches = Locked<[Int]>([])
        let consumer = fixture.consumer(topic: topic, options: options) { batch in
            batches.withLock { $0.append(batch.events.count) }
            // Event 1 keeps the handler busy while 2 and 3 reach the stream.
            if batch.events.contains(where: { $0.event.payload["n"]?.intValue == 1 }) {
                try await Task.sleep(for: .milliseconds(600))
            }
            inbox.add(batch)
        }
        try await withServices([fixture.relay(), consumer]) {
            // A lone event is handled at once, and the consumer reads again without waiting (were
            // it to wait, 1 would come 5 s later, beyond `inbox.wait`'s time below).
            try await fixture.append(numberedEvents(topic: topic, 0..<1))
            #expect(await inbox.wait { $0.count >= 1 })
            try await fixture.append(numberedEvents(topic: topic, 1..<2))
            try await Task.sleep(for: .milliseconds(100))
            try await fixture.append(numberedEvents(topic: topic, 2..<3))
            try await fixture.append(numberedEvents(topic: topic, 3..<4))
            #expect(await inbox.wait(timeout: .seconds(3)) { $0.count >= 4 })
            // 2 and 3 came in one read, so the consumer now waits before it reads again; five events
            // reach the stream meanwhile, apart enough for each to wake a consumer in a blocking read.
            for n in 4..<9 {
                try await fixture.append(numberedEvents(topic: topic, n..<(n + 1)))
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(await inbox.wait { $0.count >= 9 })
        }
        #expect(batches.withLock { $0 } == [1, 1, 2, 5])
        #expect(inbox.numbers == Array(0..<9))
        await fixture.shutdown()
    }

    /// Runs the relay and consumer `a`, appends events 0–9 and waits until `a` took some; then runs
    /// `b` beside it, appends 10–19 and runs `whileBothRun`; `a` stops last.
    private func runAThenB(
        _ fixture: EventFixture, topic: String, a: EventStreamConsumer, aTook: Inbox, b: EventStreamConsumer,
        _ whileBothRun: () async throws -> Void
    ) async throws {
        try await withServices([fixture.relay()]) {
            let runA = Task { try await a.run() }
            try await fixture.append(numberedEvents(topic: topic, 0..<10))
            #expect(await aTook.wait { !$0.isEmpty })
            try await withServices([b]) {
                try await fixture.append(numberedEvents(topic: topic, 10..<20))
                try await whileBothRun()
            }
            runA.cancel()
            _ = try? await runA.value
        }
    }

    /// Consumer "a", which takes a batch and never finishes it, and consumer "b", which records what
    /// it handles, each with what it saw.
    private func stuckAndStandby(_ fixture: EventFixture, topic: String, options: EventStreamConsumer.Options)
        -> (EventStreamConsumer, Inbox, EventStreamConsumer, Inbox)
    {
        let seenByA = Inbox()
        let inboxB = Inbox()
        let consumerA = fixture.consumer(topic: topic, name: "a", options: options) { batch in
            seenByA.add(batch)
            try await Task.sleep(for: .seconds(600))
        }
        let consumerB = fixture.consumer(topic: topic, name: "b", options: options) { inboxB.add($0) }
        return (consumerA, seenByA, consumerB, inboxB)
    }

    @Test func aHandlerThatAlwaysFailsSendsTheEntriesToTheDeadLetterStream() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("dead")
        var options = EventStreamConsumer.Options()
        options.maxDeliveries = 3
        options.retryDelay = .milliseconds(5)
        options.maxRetryDelay = .milliseconds(20)
        let attempts = Locked<[Int64: Int]>([:])
        let consumer = fixture.consumer(topic: topic, options: options) { batch in
            attempts.withLock { attempts in
                for event in batch.events { attempts[event.event.payload["n"]?.intValue ?? -1, default: 0] += 1 }
            }
            throw HandlerFailure()
        }
        let deadKey = RedisArgument(EventStream.deadLetterKey(topic: topic))
        try await withServices([fixture.relay(), consumer]) {
            try await fixture.append(numberedEvents(topic: topic, 0..<2))
            #expect(try await eventually(timeout: .seconds(20)) { try await fixture.redis.send(["XLEN", deadKey]).int == 2 })
        }
        #expect(attempts.withLock { $0 } == [0: 3, 1: 3])
        #expect(try await pendingCount(fixture, topic: topic) == 0)

        let dead = try await fixture.redis.send(["XRANGE", deadKey, "-", "+"]).array ?? []
        #expect(dead.count == 2)
        let fields = try deadLetterFields(dead[0])
        let expected = numberedEvents(topic: topic, 0..<1)[0]
        #expect(fields["type"] == "numbered")
        #expect(fields["payload"].flatMap { try? JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) } == expected.payload)
        #expect(fields["source"] == EventFixture.schema)
        #expect(fields["group"] == "\(fixture.prefix).group")
        #expect(fields["consumer"] == "consumer-1")
        #expect(fields["deliveries"] == "4")
        #expect(fields["reason"]?.contains("delivered 4 times") == true)
        #expect(fields["original_id"] != nil && fields["outbox_id"] != nil)
        await fixture.shutdown()
    }

    @Test func oneBadEventDoesNotTakeTheOthersDown() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("poison")
        var options = EventStreamConsumer.Options()
        options.maxDeliveries = 4
        options.retryDelay = .milliseconds(5)
        options.maxRetryDelay = .milliseconds(20)
        let inbox = Inbox()
        let consumer = fixture.consumer(topic: topic, options: options) { batch in
            if batch.events.contains(where: { $0.event.payload["n"] == 3 }) { throw HandlerFailure() }
            inbox.add(batch)
        }
        let deadKey = RedisArgument(EventStream.deadLetterKey(topic: topic))
        try await withServices([fixture.relay(), consumer]) {
            try await fixture.append(numberedEvents(topic: topic, 0..<8))
            #expect(await inbox.wait { $0.count >= 7 })
            #expect(try await eventually(timeout: .seconds(10)) { try await fixture.redis.send(["XLEN", deadKey]).int == 1 })
        }
        #expect(inbox.numbers == [0, 1, 2, 4, 5, 6, 7])
        let dead = try await fixture.redis.send(["XRANGE", deadKey, "-", "+"]).array ?? []
        let payload = try deadLetterFields(dead[0])["payload"] ?? ""
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(payload.utf8))["n"] == 3)
        #expect(try await pendingCount(fixture, topic: topic) == 0)
        await fixture.shutdown()
    }

    @Test func relayAndConsumerStopPromptlyOnGracefulShutdown() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("stop")
        let inbox = Inbox()
        let start = try await withServices([fixture.relay(), fixture.consumer(topic: topic) { inbox.add($0) }]) {
            try await fixture.append(numberedEvents(topic: topic, 0..<3))
            #expect(await inbox.wait { $0.count >= 3 })
            // Idle now: the consumer is in a blocking read, the relay in its poll wait.
            try await Task.sleep(for: .milliseconds(300))
            return ContinuousClock.now
        }
        // The consumer's blocking read lasts at most `blockTimeout` (1 s); the rest is slack for a loaded CI machine.
        #expect(ContinuousClock.now - start < .seconds(5))
        await fixture.shutdown()
    }

    /// How many entries the test's group has pending (`XPENDING` summary).
    private func pendingCount(_ fixture: EventFixture, topic: String) async throws -> Int {
        let reply = try await fixture.redis.send([
            "XPENDING", RedisArgument(EventStream.key(topic: topic)), RedisArgument("\(fixture.prefix).group"),
        ])
        return try #require(reply.array?.first?.int)
    }

    private func deadLetterFields(_ entry: RESPValue) throws -> [String: String] {
        let flat = try #require(entry.array?.last?.array)
        var fields: [String: String] = [:]
        for index in stride(from: 0, to: flat.count - 1, by: 2) {
            fields[flat[index].string ?? ""] = flat[index + 1].string
        }
        return fields
    }
}
