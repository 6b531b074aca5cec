import AviaryJSON
import EventStreams
import Foundation
import Locking
import Logging
import Postgres
import Prometheus
import Redis
import ServiceKit
import TestSupport
import Testing

@Suite("Outbox relay", .timeLimit(.minutes(2)))
struct OutboxRelayTests {
    @Test func committedEventsArriveInOrderPerTopic() async throws {
        let fixture = try await EventFixture.make()
        let (a, b, c) = (fixture.topic("a"), fixture.topic("b"), fixture.topic("c"))
        let (inboxA, inboxB, inboxC) = (Inbox(), Inbox(), Inbox())
        try await withServices([
            fixture.relay(),
            fixture.consumer(topic: a) { inboxA.add($0) },
            fixture.consumer(topic: b) { inboxB.add($0) },
            fixture.consumer(topic: c) { inboxC.add($0) },
        ]) {
            // Transactions mixing two topics, one after another.
            for i in 0..<100 {
                try await fixture.append(numberedEvents(topic: a, i * 3..<i * 3 + 3) + numberedEvents(topic: b, i..<i + 1))
                if i.isMultiple(of: 7) { OutboxRelay.nudge() }
            }
            // Four producers at once, each appending its own sequence.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for producer in 0..<4 {
                    group.addTask {
                        for n in 0..<50 {
                            try await fixture.append([
                                DomainEvent(topic: c, type: "counted", payload: ["producer": .int(Int64(producer)), "n": .int(Int64(n))])
                            ])
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(await inboxA.wait { $0.count >= 300 })
            #expect(await inboxB.wait { $0.count >= 100 })
            #expect(await inboxC.wait { $0.count >= 200 })
        }
        #expect(inboxA.numbers == Array(0..<300))
        #expect(inboxB.numbers == Array(0..<100))
        for producer in Int64(0)..<4 {
            let sequence = inboxC.events.filter { $0.event.payload["producer"]?.intValue == producer }
            #expect(sequence.compactMap { $0.event.payload["n"]?.intValue } == Array(0..<50), "producer \(producer)")
        }

        let first = try #require(inboxA.events.first)
        #expect(first.event == numberedEvents(topic: a, 0..<1)[0])
        #expect(first.source == EventFixture.schema)
        #expect(first.deliveries == 1)
        #expect(first.deduplicationKey == "\(EventFixture.schema):\(first.outboxID)")
        let outboxIDs = inboxA.events.map(\.outboxID)
        #expect(outboxIDs == outboxIDs.sorted() && Set(outboxIDs).count == outboxIDs.count)
        #expect(try await fixture.outboxCount() == 0)
        await fixture.shutdown()
    }

    @Test func aPreparationCompletesPayloadsAndOneThatFailsKeepsTheBatch() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("prepared")
        let inbox = Inbox()
        let calls = Locked(0)
        let preparation: OutboxRelay.Preparation = { events in
            struct Refused: Error {}
            // The first batch fails: its rows must stay in the outbox and come round again.
            guard calls.withLock({ calls in
                calls += 1
                return calls > 1
            }) else { throw Refused() }
            return events.map { event in
                var event = event
                event.payload = #"{"prepared":true,"was":\#(event.payload)}"#
                return event
            }
        }
        try await withServices([fixture.relay(preparation: preparation), fixture.consumer(topic: topic) { inbox.add($0) }]) {
            try await fixture.append(numberedEvents(topic: topic, 0..<5))
            OutboxRelay.nudge()
            #expect(await inbox.wait { $0.count >= 5 })
        }
        #expect(calls.withLock { $0 } >= 2)
        #expect(inbox.events.map { $0.event.payload["prepared"] } == Array(repeating: .bool(true), count: 5))
        #expect(inbox.events.compactMap { $0.event.payload["was"]?["n"]?.intValue } == Array(0..<5))
        #expect(try await fixture.outboxCount() == 0)
        await fixture.shutdown()
    }

    @Test func eventsAPreparationLeavesOutAreDeletedAndNotSent() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("narrowed")
        let inbox = Inbox()
        let preparation: OutboxRelay.Preparation = { events in
            try events.filter { [3, 5].contains(try JSONDecoder().decode(JSONValue.self, from: Data($0.payload.utf8))["n"]?.intValue) }
        }
        try await withServices([fixture.relay(preparation: preparation), fixture.consumer(topic: topic) { inbox.add($0) }]) {
            // A batch left out whole, then one left out in part.
            try await fixture.append(numberedEvents(topic: topic, 0..<3))
            OutboxRelay.nudge()
            #expect(try await eventually { try await fixture.outboxCount() == 0 })
            try await fixture.append(numberedEvents(topic: topic, 3..<7))
            OutboxRelay.nudge()
            #expect(await inbox.wait { $0.count >= 2 })
            // Time for anything that should not be there to show up.
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(inbox.numbers == [3, 5])
        #expect(try await fixture.outboxCount() == 0)
        await fixture.shutdown()
    }

    @Test func rolledBackEventsNeverArrive() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("rollback")
        let inbox = Inbox()
        try await withServices([fixture.relay(), fixture.consumer(topic: topic) { inbox.add($0) }]) {
            try await fixture.append(numberedEvents(topic: topic, 0..<5))
            try await fixture.appendRolledBack(numberedEvents(topic: topic, 100..<105))
            try await fixture.append(numberedEvents(topic: topic, 5..<10))
            try await fixture.appendRolledBack(numberedEvents(topic: topic, 200..<201))
            try await fixture.append(numberedEvents(topic: topic, 10..<11))
            #expect(await inbox.wait { $0.count >= 11 })
            // Time for anything that should not be there to show up.
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(inbox.numbers == Array(0..<11))
        #expect(try await fixture.outboxCount() == 0)
        await fixture.shutdown()
    }

    @Test func twoRelaysOnOneOutboxLoseNothingAndKeepTheOrder() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("shared")
        let inbox = Inbox()
        // The second relay has a client of its own, like another instance of the service.
        let otherPostgres = try PostgresClient(
            configuration: PostgresConfiguration(url: fixture.databaseURL), logger: EventFixture.logger)
        var small = OutboxRelay.Options()
        small.batchSize = 7
        small.busyDelay = .milliseconds(1)
        small.idleDelay = .milliseconds(5)
        // Nothing trimmed, so that the stream's length counts every XADD.
        small.retentionInterval = .seconds(3600)
        try await withServices([
            fixture.relay(options: small), fixture.relay(options: small, postgres: otherPostgres),
            fixture.consumer(topic: topic) { inbox.add($0) },
        ]) {
            for i in 0..<200 {
                try await fixture.append(numberedEvents(topic: topic, i * 5..<i * 5 + 5))
                if i.isMultiple(of: 3) { OutboxRelay.nudge() }
            }
            #expect(await inbox.wait { Set($0.map(\.outboxID)).count >= 1000 })
            try await Task.sleep(for: .milliseconds(300))
        }
        let numbers = inbox.numbers
        #expect(Set(numbers) == Set(0..<1000))
        #expect(numbers.count == 1000, "\(numbers.count - 1000) duplicates")
        let inversion = numbers.indices.dropFirst().first { numbers[$0] < numbers[$0 - 1] }
        #expect(inversion == nil, "\(inversion.map { "\(numbers[$0 - 1]) arrived before \(numbers[$0])" } ?? "")")
        #expect(try await fixture.redis.send(["XLEN", RedisArgument(EventStream.key(topic: topic))]).int == 1000)
        await otherPostgres.shutdown()
        await fixture.shutdown()
    }

    /// A group that takes nothing for a long time (its service down) keeps every event it has
    /// not acknowledged: the relay stops at the stream's limit and leaves the rest in the outbox,
    /// and once the group catches up, everything arrives in order and the stream is trimmed.
    @Test func aFullStreamHoldsTheRelayBackUntilTheLaggingGroupCatchesUp() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("lagging")
        let key = RedisArgument(EventStream.key(topic: topic))
        // The group exists (its service ran once) but nobody reads for it now.
        _ = try await fixture.redis.send(["XGROUP", "CREATE", key, RedisArgument("\(fixture.prefix).group"), "0", "MKSTREAM"])
        let registry = PrometheusCollectorRegistry()
        var options = OutboxRelay.Options()
        options.streamMaxLength = 300
        options.batchSize = 50
        options.retentionInterval = .milliseconds(1)
        let relay = fixture.relay(options: options, metrics: MetricsBootstrap.makeFactory(registry: registry))
        func streamLength() async throws -> Int { try #require(try await fixture.redis.send(["XLEN", key]).int) }
        for i in 0..<10 { try await fixture.append(numberedEvents(topic: topic, i * 100..<i * 100 + 100)) }
        try await withServices([relay]) {
            #expect(await eventually { (try? await streamLength()) ?? 0 >= 300 })
            try await Task.sleep(for: .milliseconds(500))
            let (length, waiting) = (try await streamLength(), try await fixture.outboxCount())
            #expect(length < 300 + 50 * 2, "the relay stopped within a batch or two of the limit")
            #expect(Int64(length) + waiting == 1000, "every event is in the stream or still in the outbox")
        }

        let inbox = Inbox()
        try await withServices([relay, fixture.consumer(topic: topic) { inbox.add($0) }]) {
            #expect(await inbox.wait { $0.count >= 1000 })
            // Acknowledged entries are trimmed (MINID ~ keeps the last, partial node of 100).
            #expect(await eventually { (try? await streamLength()) ?? .max <= 100 })
            #expect(await eventually {
                prometheusValue(#"aviary_event_stream_length{topic="\#(topic)""#, in: registry).map { $0 <= 100 } ?? false
            })
        }
        #expect(inbox.numbers == Array(0..<1000))
        #expect(try await fixture.outboxCount() == 0)
        await fixture.shutdown()
    }

    /// A lagging group destroyed for good (as the relay's warning suggests) no longer holds the relay:
    /// the stream stays at its limit without groups, and the rest of the outbox goes on.
    @Test func destroyingTheLaggingGroupLetsTheRelayGoOn() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("retired")
        let (key, group) = (RedisArgument(EventStream.key(topic: topic)), RedisArgument("\(fixture.prefix).group"))
        _ = try await fixture.redis.send(["XGROUP", "CREATE", key, group, "0", "MKSTREAM"])
        var options = OutboxRelay.Options()
        options.streamMaxLength = 300
        options.batchSize = 50
        options.retentionInterval = .milliseconds(1)
        for i in 0..<10 { try await fixture.append(numberedEvents(topic: topic, i * 100..<i * 100 + 100)) }
        let drained = try await withServices([fixture.relay(options: options)]) {
            #expect(await eventually { (try? await fixture.redis.send(["XLEN", key]).int) ?? 0 >= 300 })
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await fixture.outboxCount() > 0, "held back")
            _ = try await fixture.redis.send(["XGROUP", "DESTROY", key, group])
            return await eventually { (try? await fixture.outboxCount()) == 0 }
        }
        #expect(drained, "the outbox drains once the group is gone")
        await fixture.shutdown()
    }

    /// Without a group nobody will miss old events: the stream keeps its newest `streamMaxLength`
    /// for a group made later, and the relay never waits.
    @Test func aStreamNoGroupReadsKeepsItsNewestEventsAndNeverHoldsTheRelay() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("unread")
        var options = OutboxRelay.Options()
        options.streamMaxLength = 300
        options.batchSize = 50
        options.retentionInterval = .milliseconds(1)
        for i in 0..<10 { try await fixture.append(numberedEvents(topic: topic, i * 100..<i * 100 + 100)) }
        try await withServices([fixture.relay(options: options)]) {
            #expect(await eventually { (try? await fixture.outboxCount()) == 0 })
            try await Task.sleep(for: .milliseconds(100))
        }
        let length = try #require(try await fixture.redis.send(["XLEN", RedisArgument(EventStream.key(topic: topic))]).int)
        #expect((300..<400).contains(length), "\(length)")
        await fixture.shutdown()
    }

    @Test func eventsAppendedWhileRedisIsDownArriveAfterItReturns() async throws {
        let redisServer = try await TestServers.startPrivateRedis()
        let fixture = try await EventFixture.make(redis: redisServer)
        let topic = fixture.topic("outage")
        let inbox = Inbox()
        var options = OutboxRelay.Options()
        options.maxRetryDelay = .milliseconds(500)
        try await withServices([fixture.relay(options: options), fixture.consumer(topic: topic) { inbox.add($0) }]) {
            try await fixture.append(numberedEvents(topic: topic, 0..<20))
            #expect(await inbox.wait { $0.count >= 20 })

            try await redisServer.stop()
            for i in 0..<4 {
                try await fixture.append(numberedEvents(topic: topic, 20 + i * 10..<30 + i * 10))
            }
            OutboxRelay.nudge()
            try await Task.sleep(for: .milliseconds(700))
            #expect(try await fixture.outboxCount() == 40, "the events wait in the outbox")

            // Redis comes back empty: the relay sends the rows, the consumer makes its group again.
            try await redisServer.start()
            #expect(await inbox.wait { $0.count >= 60 })
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(inbox.numbers == Array(0..<60))
        #expect(try await fixture.outboxCount() == 0)
        await fixture.shutdown()
    }

    /// With Redis down the rows stay, and the gauge follows them: counted while there are fewer
    /// than 10,000, then the span of their ids, which reading two ends of the primary key gives
    /// however long the backlog grows.
    @Test func theBacklogGaugeCountsUpTo10000RowsThenSpansTheirIDs() async throws {
        let redisServer = try await TestServers.startPrivateRedis()
        let fixture = try await EventFixture.make(redis: redisServer)
        try await redisServer.stop()
        let registry = PrometheusCollectorRegistry()
        var options = OutboxRelay.Options()
        options.backlogInterval = .milliseconds(50)
        options.maxRetryDelay = .milliseconds(100)
        func gauge() -> Double? { prometheusValue(#"aviary_outbox_backlog{schema="producer""#, in: registry) }
        let outbox = "\(EventFixture.schema).outbox"
        try await withServices([fixture.relay(options: options, metrics: MetricsBootstrap.makeFactory(registry: registry))]) {
            try await fixture.append(numberedEvents(topic: fixture.topic("backlog"), 0..<3))
            #expect(await eventually { gauge() == 3 })
            try await fixture.postgres.execute(
                "INSERT INTO \(outbox) (topic, type, payload) SELECT 'backlog', 'filler', '{}' FROM generate_series(1, 25000)")
            #expect(await eventually { gauge() == 25_003 })
            // Every other row gone: 12,502 wait, and the gauge, beyond what it counts, says their span.
            try await fixture.postgres.execute("DELETE FROM \(outbox) WHERE id % 2 = 0")
            #expect(try await fixture.outboxCount() == 12_502)
            try await Task.sleep(for: .milliseconds(300))
            #expect(gauge() == 25_003)
            // Below the limit it counts again: ids 1, 3, 5, 7 and 9 are left.
            try await fixture.postgres.execute("DELETE FROM \(outbox) WHERE id > 9")
            #expect(await eventually { gauge() == 5 })
        }
        await fixture.shutdown()
    }

    @Test func nudgeRelaysWithoutWaitingForThePoll() async throws {
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("nudge")
        let inbox = Inbox()
        var slow = OutboxRelay.Options()
        slow.busyDelay = .seconds(30)
        slow.idleDelay = .seconds(30)
        try await withServices([fixture.relay(options: slow), fixture.consumer(topic: topic) { inbox.add($0) }]) {
            // Let the relay find the outbox empty and settle into its long wait.
            try await Task.sleep(for: .milliseconds(300))
            try await fixture.append(numberedEvents(topic: topic, 0..<1))
            let start = ContinuousClock.now
            OutboxRelay.nudge()
            #expect(await inbox.wait(timeout: .seconds(5)) { $0.count == 1 })
            #expect(ContinuousClock.now - start < .seconds(2))
        }
        await fixture.shutdown()
    }

    @Test("a relay warns at start when Redis keeps no append-only file, and only then")
    func warnsWhenRedisWouldForgetEvents() async throws {
        let redisServer = try await TestServers.startPrivateRedis()  // started with appendonly no
        let fixture = try await EventFixture.make(redis: redisServer)
        func warnings() async throws -> [String] {
            let lines = Locked<[String]>([])
            let logger = Logger(label: "relay") { _ in
                LineLogHandler(format: .text, service: "relay", output: LogOutput { line in
                    lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) }
                })
            }
            let relay = OutboxRelay(schema: EventFixture.schema, postgres: fixture.postgres, redis: fixture.redis, logger: logger)
            try await withServices([relay]) { try await Task.sleep(for: .milliseconds(300)) }
            return lines.withLock { $0 }.filter { $0.contains(" warning ") }
        }
        let without = try await warnings()
        #expect(without.count == 1)
        #expect(without.first?.contains("Redis keeps no append-only file") == true)
        #expect(without.first?.contains("appendonly yes") == true)

        _ = try await fixture.redis.send(["CONFIG", "SET", "appendonly", "yes"])
        #expect(try await warnings().isEmpty)
        await fixture.shutdown()
        try await redisServer.stop()
    }
}
