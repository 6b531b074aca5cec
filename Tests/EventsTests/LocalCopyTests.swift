import EventStreams
import Logging
import Redis
import TestSupport
import Testing

@Suite("LocalCopy")
struct LocalCopyTests {
    @Test("a full copy drops the values it kept longest ago, an eighth at a time")
    func dropsTheOldestFirst() async throws {
        let logger = Logger(label: "local-copy-test")
        let redis = RedisClient(configuration: try RedisConfiguration(url: try await TestServers.redis().url), logger: logger)
        let kind = LocalCopyKind(service: "tests", name: "numbers", channelPrefix: "aviary:tests:local-copy-\(UInt32.random(in: 0...UInt32.max))")
        let copy = LocalCopy<Int>(kind, redis: redis, capacity: 16, lifetime: .seconds(60), logger: logger)
        let subscriber = RedisSubscriber(configuration: redis.configuration, logger: logger)
        let watching = Task { await copy.watch(on: subscriber) }
        // Values are kept once the copy hears announcements.
        #expect(await eventually { copy.values([]).epoch != nil })
        func keep(_ ids: ClosedRange<Int>) {
            copy.keep(ids.map { (key: Int64($0), value: $0) }, since: copy.values([]).epoch)
        }
        func held(_ ids: ClosedRange<Int>) -> [Int] {
            copy.values(ids.map(Int64.init)).found.keys.map(Int.init).sorted()
        }

        keep(1...16)
        #expect(held(1...16) == Array(1...16))
        // Full: the 17th makes room by dropping the two kept first.
        keep(17...17)
        #expect(held(1...17) == Array(3...17))
        // Kept again, 3 counts as kept last: when room is needed next, 4 and 5 go.
        keep(3...3)
        keep(18...18)
        #expect(held(1...18) == Array(3...18))
        keep(19...20)
        #expect(held(1...20) == [3] + Array(6...20))
        // Forgotten values leave no gap in the order: the next drops are the oldest still held.
        copy.forget([6, 7])
        keep(21...23)
        #expect(held(1...23) == [3] + Array(10...23))

        await subscriber.shutdown()
        await watching.value
        await redis.shutdown()
    }
}
