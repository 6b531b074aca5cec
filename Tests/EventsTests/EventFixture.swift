import AviaryJSON
import EventStreams
import Foundation
import Locking
import Logging
import Metrics
import Postgres
import Prometheus
import RPC
import Redis
import ServiceKit
import ServiceLifecycle
import TestSupport
import Testing

/// One test's world: a fresh database with a producer schema and its outbox, a Redis server (the
/// shared one unless the test brings its own), and topic names no other test uses.
struct EventFixture {
    static let schema = "producer"
    /// Quiet unless `AVIARY_TEST_LOG_LEVEL` is set (say `debug`), to follow a failing test.
    static let logger: Logger = {
        guard let level = ProcessInfo.processInfo.environment["AVIARY_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
        else { return Logger(label: "events-test") { _ in SwiftLogNoOpLogHandler() } }
        var logger = Logger(label: "events-test") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = level
        return logger
    }()

    let databaseURL: String
    let postgres: PostgresClient
    let redis: RedisClient
    let redisConfiguration: RedisConfiguration
    /// A prefix for this test's topics and groups.
    let prefix = "t\(UUID().uuidString.prefix(8).lowercased())"

    static func make(redis testRedis: TestRedis? = nil) async throws -> EventFixture {
        let url = try await TestServers.postgres().makeDatabase()
        let postgres = try PostgresClient(configuration: PostgresConfiguration(url: url), logger: logger)
        try await PostgresMigrator(schema: schema, migrations: [Outbox.migration(schema: schema, version: 1)])
            .migrate(postgres)
        let redisURL: String
        if let testRedis {
            redisURL = testRedis.url
        } else {
            redisURL = try await TestServers.redis().url
        }
        let configuration = try RedisConfiguration(url: redisURL, poolSize: 4)
        return EventFixture(
            databaseURL: url, postgres: postgres, redis: RedisClient(configuration: configuration, logger: logger),
            redisConfiguration: configuration)
    }

    func topic(_ name: String) -> String { "\(prefix).\(name)" }

    /// Appends `events` in one committed transaction.
    func append(_ events: [DomainEvent]) async throws {
        try await postgres.transaction { connection in
            for event in events { try await Outbox.append(event, schema: Self.schema, on: connection) }
        }
    }

    /// Appends `events` in a transaction that then fails, so it rolls back.
    func appendRolledBack(_ events: [DomainEvent]) async throws {
        await #expect(throws: RolledBack.self) {
            try await postgres.transaction { connection in
                for event in events { try await Outbox.append(event, schema: Self.schema, on: connection) }
                throw RolledBack()
            }
        }
    }

    struct RolledBack: Error {}

    func outboxCount() async throws -> Int64 {
        try await postgres.query("SELECT count(*) FROM \(Self.schema).outbox")[0].decode(Int64.self, at: 0)
    }

    func relay(
        options: OutboxRelay.Options = .init(), postgres: PostgresClient? = nil, preparation: OutboxRelay.Preparation? = nil,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) -> OutboxRelay {
        OutboxRelay(
            schema: Self.schema, postgres: postgres ?? self.postgres, redis: redis, options: options, preparation: preparation,
            logger: Self.logger, metrics: metrics)
    }

    func consumer(
        topic: String, group: String = "group", name: String = "consumer-1", options: EventStreamConsumer.Options = .init(),
        metrics: any MetricsFactory = MetricsSystem.factory, handler: @escaping EventStreamConsumer.Handler
    ) -> EventStreamConsumer {
        EventStreamConsumer(
            topic: topic, group: "\(prefix).\(group)", consumer: name, redis: redisConfiguration, options: options,
            logger: Self.logger, metrics: metrics, handler: handler)
    }

    func shutdown() async {
        await redis.shutdown()
        await postgres.shutdown()
    }
}

/// The value of the first series of `registry` whose Prometheus line starts with `prefix`.
func prometheusValue(_ prefix: String, in registry: PrometheusCollectorRegistry) -> Double? {
    prometheusValue(prefix, in: String(decoding: MetricsBootstrap.render(registry), as: UTF8.self))
}

/// Numbered events, so a test can check order and completeness: payload `{"n": n, "text": …}` with
/// text that would break naive quoting.
func numberedEvents(topic: String, _ range: Range<Int>) -> [DomainEvent] {
    range.map { n in
        DomainEvent(topic: topic, type: "numbered", payload: ["n": .int(Int64(n)), "text": .string("it's \"n\" = \(n) 🐦\\")])
    }
}

/// What a consumer's handler received, in order.
final class Inbox: Sendable {
    private let received = Locked<[DeliveredEvent]>([])

    func add(_ batch: EventBatch) {
        received.withLock { $0 += batch.events }
    }

    var events: [DeliveredEvent] { received.withLock { $0 } }

    /// The `n` of each numbered event received, in order.
    var numbers: [Int64] { events.compactMap { $0.event.payload["n"]?.intValue } }

    /// Waits until `condition` holds for the events received, up to `timeout`.
    func wait(timeout: Duration = .seconds(20), until condition: ([DeliveredEvent]) -> Bool) async -> Bool {
        await eventually(timeout: timeout) { condition(events) }
    }
}

/// Runs `services` in a service group while `body` runs, then shuts the group down gracefully and
/// waits for it: a service that does not stop makes the test hang (and fail on its time limit).
func withServices<T: Sendable>(_ services: [any Service], _ body: () async throws -> T) async throws -> T {
    let group = ServiceGroup(
        configuration: .init(services: services.map { .init(service: $0) }, logger: EventFixture.logger))
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        do {
            let value = try await body()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return value
        } catch {
            await group.triggerGracefulShutdown()
            try? await tasks.waitForAll()
            throw error
        }
    }
}
