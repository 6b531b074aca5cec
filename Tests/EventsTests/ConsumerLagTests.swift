import EventStreams
import Foundation
import Locking
import Prometheus
import ServiceKit
import TestSupport
import Testing

@Suite("Event consumer lag", .timeLimit(.minutes(2)))
struct ConsumerLagTests {
    /// `aviary_events_lag_seconds` of `topic` as `registry` holds it now (its dimensions are
    /// `topic`, then `group`).
    static func lag(topic: String, in registry: PrometheusCollectorRegistry) -> Double? {
        prometheusValue("aviary_events_lag_seconds{topic=\"\(topic)\"", in: registry)
    }

    @Test("aviary_events_lag_seconds is how old the batch's oldest event was when taken, and 0 once caught up")
    func lagOfABatchThenCaughtUp() async throws {
        let registry = PrometheusCollectorRegistry()
        let fixture = try await EventFixture.make()
        let topic = fixture.topic("lag")
        // In the stream, then left there for a second before any consumer reads.
        try await withServices([fixture.relay()]) {
            try await fixture.append(numberedEvents(topic: topic, 0..<3))
            #expect(await eventually { (try? await fixture.outboxCount()) == 0 })
        }
        try await Task.sleep(for: .seconds(1))

        var options = EventStreamConsumer.Options()
        options.blockTimeout = .milliseconds(100)
        let seenByHandler = Locked<[Double?]>([])
        let inbox = Inbox()
        let consumer = fixture.consumer(
            topic: topic, options: options, metrics: MetricsBootstrap.makeFactory(registry: registry)
        ) { batch in
            seenByHandler.withLock { $0.append(Self.lag(topic: topic, in: registry)) }
            inbox.add(batch)
        }
        try await withServices([consumer]) {
            #expect(await inbox.wait { $0.count == 3 })
            #expect(await eventually { Self.lag(topic: topic, in: registry) == 0 })
        }
        let first = try #require(seenByHandler.withLock { $0.first } ?? nil)
        #expect(first >= 1 && first < 10, "lag \(first) s")
        await fixture.shutdown()
    }
}
