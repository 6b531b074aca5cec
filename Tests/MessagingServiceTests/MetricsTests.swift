import Testing
import TestSupport

@Suite("Messaging metrics")
struct MetricsTests {
    @Test("aviary_subscriptions_active counts the instance's open subscriptions; aviary_postgres_pool_in_use is exported")
    func gauges() async throws {
        let fixture = try await MessagingStack.shared()
        // An instance of this test's own, so that no other test's subscriptions count.
        let instance = try await fixture.stack.startExtraInstance("messaging")
        defer { instance.kill() }
        let users = try await fixture.users(2, "gauge")
        func active() throws -> Int { try instance.metric("aviary_subscriptions_active ") }
        #expect(try active() == 0)

        let first = try await fixture.subscribe(users[0], on: instance)
        let second = try await fixture.subscribe(users[1], on: instance)
        let third = try await fixture.subscribe(users[1], on: instance)
        #expect(try active() == 3)
        await second.close()
        #expect(await eventually { (try? active()) == 2 })
        await first.close()
        await third.close()
        #expect(await eventually { (try? active()) == 0 })

        let inUse = try #require(try instance.metricValue("aviary_postgres_pool_in_use "))
        #expect((0...8).contains(inUse))
    }
}
