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

    @Test("a writer reads past every copy until all have surely heard of the write; other viewers wait for it")
    func writersReadTheirWrites() async throws {
        let logger = Logger(label: "local-copy-test")
        let redis = RedisClient(configuration: try RedisConfiguration(url: try await TestServers.redis().url), logger: logger)
        let kind = LocalCopyKind(
            service: "tests", name: "likes-\(UInt32.random(in: 0...UInt32.max))", channelPrefix: "aviary:tests:local-copy-writers")
        // Two processes' copies: the writer's, and one whose announcement has not come yet (none is
        // sent here: the copies' watches hear nothing).
        let writers = (0..<2).map { _ in
            LocalCopy<Int>(kind, redis: redis, capacity: 16, lifetime: .seconds(2), markingWriters: true, logger: logger)
        }
        let subscriber = RedisSubscriber(configuration: redis.configuration, logger: logger)
        let watching = writers.map { copy in Task { await copy.watch(on: subscriber) } }
        for copy in writers {
            #expect(await eventually { copy.values([]).epoch != nil })
            copy.keep([(key: 1, value: 10)], since: copy.values([]).epoch)
        }
        let (here, there) = (writers[0], writers[1])

        await here.changed([1], by: 7)
        #expect(here.values([1]).found.isEmpty, "the writer's process drops it at once")
        #expect(await there.values([1], viewer: 7).found.isEmpty, "the writer is shown what Postgres has")
        #expect(await there.values([1], viewer: 8).found == [1: 10], "another viewer, until the announcement")
        #expect(there.values([1]).found == [1: 10])
        // A copy that does not mark writers shows its values to anyone.
        let unmarked = LocalCopy<Int>(kind, redis: redis, capacity: 16, lifetime: .seconds(2), logger: logger)
        let watchingUnmarked = Task { await unmarked.watch(on: subscriber) }
        #expect(await eventually { unmarked.values([]).epoch != nil })
        unmarked.keep([(key: 1, value: 10)], since: unmarked.values([]).epoch)
        #expect(await unmarked.values([1], viewer: 7).found == [1: 10])
        // The mark lasts the copies' lifetime: by then no value kept before the write is held.
        #expect(await eventually(timeout: .seconds(5)) { there.values([1]).found.isEmpty })
        let ended = await eventually(timeout: .seconds(5)) {
            there.keep([(key: 1, value: 11)], since: there.values([]).epoch)
            return await there.values([1], viewer: 7).found == [1: 11]
        }
        #expect(ended, "the mark ends with the lifetime")

        await subscriber.shutdown()
        for task in watching + [watchingUnmarked] { await task.value }
        await redis.shutdown()
    }
}
