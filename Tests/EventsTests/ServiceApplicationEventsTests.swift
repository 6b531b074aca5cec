import AviaryJSON
import EventStreams
import Foundation
import Postgres
import Prometheus
import RPC
import Redis
import ServiceKit
import TestSupport
import Testing

@Suite("Events in ServiceApplication", .timeLimit(.minutes(2)))
struct ServiceApplicationEventsTests {
    @Test func aServiceRelaysItsOutboxAndRunsItsConsumers() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        let redis = try await TestServers.redis()
        let topic = "t\(UUID().uuidString.prefix(8).lowercased()).app"
        let inbox = Inbox()
        let definition = ServiceDefinition(
            name: .tweets, migrations: [Outbox.migration(schema: "tweets", version: 1)], outboxSchema: "tweets"
        ) { _, resources in
            // A service adds its consumers as it builds itself.
            resources.consume(EventConsumerDefinition(topic: topic) { batch in inbox.add(batch) })
        }
        let configuration = try ServiceConfiguration.load(
            service: .tweets,
            environment: [
                "AVIARY_POSTGRES_URL": url, "AVIARY_REDIS_URL": redis.url, "AVIARY_RPC_PORT": "0",
                "AVIARY_ADMIN_PORT": "0",
            ])
        let service = Task {
            try await ServiceApplication.run(
                definition, configuration: configuration, registry: PrometheusCollectorRegistry(),
                logger: EventFixture.logger)
        }
        let postgres = try PostgresClient(configuration: PostgresConfiguration(url: url), logger: EventFixture.logger)
        // The outbox exists once the service has migrated.
        let appended = await eventually(timeout: .seconds(20)) {
            do {
                try await postgres.transaction { connection in
                    try await Outbox.append(DomainEvent(topic: topic, type: "created", payload: ["id": "1"]), schema: "tweets", on: connection)
                }
                return true
            } catch {
                return false
            }
        }
        #expect(appended)
        #expect(await inbox.wait { !$0.isEmpty })
        #expect(inbox.events.first?.event == DomainEvent(topic: topic, type: "created", payload: ["id": "1"]))
        #expect(inbox.events.first?.source == "tweets")

        let client = try RedisClient(configuration: RedisConfiguration(url: redis.url, poolSize: 1), logger: EventFixture.logger)
        let groups = try await client.send(["XINFO", "GROUPS", RedisArgument(EventStream.key(topic: topic))]).array ?? []
        let names = groups.compactMap { group in
            (group.array ?? []).indices.first { ($0 % 2 == 0) && group.array?[$0].string == "name" }.flatMap { group.array?[$0 + 1].string }
        }
        #expect(names == ["tweets"], "the group defaults to the service's name")

        service.cancel()
        try? await service.value
        await client.shutdown()
        await postgres.shutdown()
    }
}
