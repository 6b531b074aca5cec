import Foundation
import Locking
import Logging
import Redis
import Synchronization
import TestSupport
import Testing

/// The client against a real six-node Redis Cluster (``TestRedisGroup/launchCluster()``), one for
/// the suite; the tests that move slots or kill a master run one at a time.
///
/// The tests that move a slot and back have a cluster of their own. A slot moved back by
/// `SETSLOT NODE` reaches the replicas by gossip alone, and a replica promoted after a kill
/// claimed its master's slots but the one moved (seen once in a dry run of CI, after every node's
/// `CLUSTER NODES` had agreed): the failover tests never meet a slot that moved.
@Suite(.serialized) struct RedisClusterTests {
    static let cluster = Task { try await TestRedisGroup.launchCluster() }
    static let migratingCluster = Task { try await TestRedisGroup.launchCluster() }

    private func withClusterClient<T>(
        _ cluster: Task<TestRedisGroup, any Error> = Self.cluster, _ body: (RedisClient, TestRedisGroup) async throws -> T
    ) async throws -> T {
        let cluster = try await cluster.value
        var configuration = try RedisConfiguration(url: cluster.url, poolSize: 2)
        configuration.connectTimeout = .seconds(2)
        let client = RedisClient(configuration: configuration, logger: testLogger)
        do {
            let result = try await body(client, cluster)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }

    @Test func commandsGoToTheirSlotsMaster() async throws {
        try await withClusterClient { client, cluster in
            let prefix = uniqueName("spread")
            let keys = (0..<300).map { "\(prefix):\($0)" }
            let sets = try await client.pipeline(keys.map { ["SET", RedisArgument($0), RedisArgument("v-\($0)")] })
            #expect(sets.allSatisfy { $0 == .simpleString("OK") })
            // Every master holds some of them: the keys went to their slots' masters.
            for master in try await cluster.masters() {
                let held = try await cluster.cli(port: master, ["--scan", "--pattern", "\(prefix):*"])
                #expect(!held.isEmpty, "master \(master) holds none of the keys")
            }
            // A pipeline across nodes answers in order, error replies in place.
            let replies = try await client.pipeline([
                ["GET", RedisArgument(keys[0])], ["INCR", RedisArgument(keys[1])], ["GET", RedisArgument(keys[2])], ["PING"],
            ])
            #expect(replies[0].string == "v-\(keys[0])")
            #expect(replies[1].errorMessage?.hasPrefix("ERR") == true)
            #expect(replies[2].string == "v-\(keys[2])")
            #expect(replies[3] == .simpleString("PONG"))
            // Multi-key commands across slots are split per slot and put back together.
            let asked = [keys[5], "\(prefix):missing", keys[299], keys[7]]
            let values = try await client.send(["MGET"] + asked.map { RedisArgument($0) }).array ?? []
            #expect(values.map(\.string) == ["v-\(keys[5])", nil, "v-\(keys[299])", "v-\(keys[7])"])
            #expect(try await client.send(["EXISTS"] + keys.prefix(50).map { RedisArgument($0) }).int == 50)
            #expect(try await client.delete(keys) == 300)
            #expect(try await client.send(["EXISTS"] + keys.prefix(50).map { RedisArgument($0) }).int == 0)
        }
    }

    @Test func hashTaggedKeysShareScriptsAndTransactions() async throws {
        try await withClusterClient { client, _ in
            let tag = "{\(uniqueName("tag"))}"
            let script = RedisScript("redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[1]); return 1")
            #expect(try await client.evaluate(script, keys: ["\(tag):a", "\(tag):b"], arguments: ["x"]).int == 1)
            let replies = try await client.pipeline([
                ["MULTI"], ["INCR", RedisArgument("\(tag):n")], ["INCR", RedisArgument("\(tag):n")], ["EXEC"],
                ["GET", RedisArgument("\(tag):a")],
            ])
            #expect(replies[3] == .array([.integer(1), .integer(2)]))
            #expect(replies[4].string == "x")
            // Keys of different slots in one script are refused by Redis, as a reply naming the problem.
            await #expect {
                try await client.evaluate(script, keys: [uniqueName("a"), uniqueName("b") + "x"], arguments: ["x"])
            } throws: { error in
                (error as? RedisError)?.serverMessage?.hasPrefix("CROSSSLOT") == true
            }
        }
    }

    @Test func scriptsLostByANodeAreSentAgain() async throws {
        try await withClusterClient { client, _ in
            let script = RedisScript("return redis.call('INCR', KEYS[1])")
            let keys = (0..<40).map { _ in uniqueName("script") }
            _ = try await client.send(["SCRIPT", "FLUSH"])  // on every master
            let first = try await client.evaluateEach(script, keys.map { ([$0], []) })
            #expect(first.allSatisfy { $0 == .integer(1) })
            let second = try await client.evaluateEach(script, keys.map { ([$0], []) })
            #expect(second.allSatisfy { $0 == .integer(2) })
            #expect(client.batches(of: keys, upTo: 1000).allSatisfy { batch in Set(batch.map(RedisSlot.of)).count == 1 })
        }
    }

    @Test func followsMovedAndAskWhileASlotMigrates() async throws {
        try await withClusterClient(Self.migratingCluster) { client, cluster in
            let key = uniqueName("moving")
            let slot = RedisSlot.of(key)
            _ = try await client.send(["SET", RedisArgument(key), "before"])
            let masters = try await cluster.masters()
            let nodes = try await Self.nodeIDs(cluster, masters)
            guard let source = try await Self.owner(of: slot, cluster, masters),
                let target = masters.first(where: { $0 != source })
            else { throw TimedOut(description: "no owner for slot \(slot)") }
            // Migration under way: the source still has the slot, the key already went to the target.
            try await cluster.cli(port: target, ["CLUSTER", "SETSLOT", String(slot), "IMPORTING", nodes[source]!])
            try await cluster.cli(port: source, ["CLUSTER", "SETSLOT", String(slot), "MIGRATING", nodes[target]!])
            try await cluster.cli(port: source, ["MIGRATE", "127.0.0.1", String(target), key, "0", "5000"])
            #expect(try await client.get(key).map { String(decoding: $0, as: UTF8.self) } == "before")  // ASK
            // The slot moves: the source answers MOVED, and the client keeps the new owner.
            for port in masters {
                try await cluster.cli(port: port, ["CLUSTER", "SETSLOT", String(slot), "NODE", nodes[target]!])
            }
            _ = try await client.send(["SET", RedisArgument(key), "after"])
            #expect(try await cluster.cli(port: target, ["GET", key]).trimmingCharacters(in: .whitespacesAndNewlines) == "after")
            // Move it back, so the cluster stays balanced for the other tests.
            try await cluster.cli(port: source, ["CLUSTER", "SETSLOT", String(slot), "IMPORTING", nodes[target]!])
            try await cluster.cli(port: target, ["CLUSTER", "SETSLOT", String(slot), "MIGRATING", nodes[source]!])
            try await cluster.cli(port: target, ["MIGRATE", "127.0.0.1", String(source), key, "0", "5000"])
            for port in masters {
                try await cluster.cli(port: port, ["CLUSTER", "SETSLOT", String(slot), "NODE", nodes[source]!])
            }
            #expect(try await client.get(key).map { String(decoding: $0, as: UTF8.self) } == "after")
            try await Self.settle(slotsOf: source, cluster)
        }
    }

    /// After a slot was moved back to `owner` by `SETSLOT NODE` on the masters: the replicas hear of
    /// it by gossip only, and believe the claim only of a node whose config epoch is the highest,
    /// or they keep the old map. The owner's epoch is raised, and every node's map must agree,
    /// before the next test moves a slot.
    private static func settle(slotsOf owner: Int, _ cluster: TestRedisGroup) async throws {
        _ = try await cluster.cli(port: owner, ["CLUSTER", "BUMPEPOCH"])
        try await cluster.waitUntilClusterIsOK()
    }

    /// Sharded pub/sub: each channel is heard on the master of its slot only, and a subscription
    /// follows its slot to another master.
    @Test func subscribersHearTheirChannelsShardAndFollowItsSlot() async throws {
        try await withClusterClient(Self.migratingCluster) { client, cluster in
            var configuration = try RedisConfiguration(url: cluster.url)
            configuration.connectTimeout = .seconds(2)
            let subscriber = RedisSubscriber(configuration: configuration, logger: testLogger)
            let events = Collector(subscriber.events())
            let channels = (0..<12).map { _ in uniqueName("news") }
            var heard: [Collector<RedisMessage>] = []
            for channel in channels { heard.append(Collector(try await subscriber.subscribe(channel))) }
            for (index, channel) in channels.enumerated() {
                // SPUBLISH: the shard's one subscriber connection hears it.
                #expect(try await client.publish(RedisArgument("m\(index)"), to: channel) == 1)
            }
            for (index, messages) in heard.enumerated() {
                #expect(try await messages.wait(for: 1).map(\.text) == ["m\(index)"])
            }
            let masters = try await cluster.masters()
            let channel = channels[0]
            var owners: [Int] = []
            for port in masters where try await Self.shardSubscribers(channel, on: port, cluster) == 1 { owners.append(port) }
            #expect(owners.count == 1, "subscribed on \(owners), not on its slot's master alone")
            let (source, slot) = (try #require(owners.first), RedisSlot.of(channel))
            let target = try #require(masters.first { $0 != source })
            let nodes = try await Self.nodeIDs(cluster, masters)

            // The slot (no keys in it) moves: the source drops the channel, the subscriber follows.
            // Settled first: until the target's epoch is the highest, gossip may give the slot back
            // to the source on some nodes, and two masters then each name the other its owner.
            for port in masters { try await cluster.cli(port: port, ["CLUSTER", "SETSLOT", String(slot), "NODE", nodes[target]!]) }
            try await Self.settle(slotsOf: target, cluster)
            try await events.wait(for: 2)
            #expect(events.collected == [.disconnected, .reconnected])
            #expect(try await Self.shardSubscribers(channel, on: target, cluster) == 1)
            #expect(try await client.publish("moved", to: channel) == 1)
            #expect(try await heard[0].wait(for: 2).map(\.text) == ["m0", "moved"])
            for port in masters { try await cluster.cli(port: port, ["CLUSTER", "SETSLOT", String(slot), "NODE", nodes[source]!]) }
            try await Self.settle(slotsOf: source, cluster)
            try await events.wait(for: 4)
            for messages in heard { messages.cancel() }
            await subscriber.shutdown()
        }
    }

    /// `PUBSUB SHARDNUMSUB channel` on the node at `port`.
    private static func shardSubscribers(_ channel: String, on port: Int, _ cluster: TestRedisGroup) async throws -> Int? {
        let lines = try await cluster.cli(port: port, ["PUBSUB", "SHARDNUMSUB", channel]).split(separator: "\n")
        return lines.last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// A master is killed under a steady stream of writes: its replica takes over, calls fail only
    /// while it does, and every write its replica had, and every write after, is there afterwards.
    @Test func aMastersReplicaTakesOver() async throws {
        try await withClusterClient { client, cluster in
            try await cluster.waitUntilClusterIsOK()
            let prefix = uniqueName("failover")
            let (victim, replica) = try #require(try await Self.masterWithReplica(cluster))
            let acknowledged = Locked<[String]>([])
            let failures = Locked<[ContinuousClock.Instant]>([])
            let stop = Atomic<Bool>(false)
            let writer = Task {
                var index = 0
                while !stop.load(ordering: .relaxed) {
                    let key = "\(prefix):\(index)"
                    index += 1
                    do {
                        _ = try await client.send(["SET", RedisArgument(key), "1"])
                        acknowledged.withLock { $0.append(key) }
                    } catch {
                        failures.withLock { $0.append(.now) }
                        try? await Task.sleep(for: .milliseconds(5))
                    }
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            // Redis replicates asynchronously: a write acknowledged in the last instant before the
            // kill may die with the master (the outbox relays WAIT for that reason). A WAIT on the
            // victim marks what its replica has: every write acknowledged before it.
            let copied = acknowledged.withLock { $0.count }
            var marker = ""
            repeat {
                marker = uniqueName("\(prefix):marker")
                _ = try await client.send(["SET", RedisArgument(marker), "1"])
            } while try await Self.owner(of: RedisSlot.of(marker), cluster, [victim]) == nil
            #expect(try await client.pipeline([["SET", RedisArgument(marker), "1"], ["WAIT", 1, 500]]).last == .integer(1))
            let killed = ContinuousClock.now
            try await cluster.kill(port: victim)
            let promoted = await TestSupport.eventually(timeout: .seconds(30), interval: .milliseconds(50)) {
                let masters = (try? await cluster.masters()) ?? []
                return masters.contains(replica) && !masters.contains(victim)
            }
            #expect(promoted)
            let afterFailover = acknowledged.withLock { $0.count }
            try await cluster.waitUntilClusterIsOK()
            try await Task.sleep(for: .seconds(1))
            stop.store(true, ordering: .relaxed)
            await writer.value
            let failed = failures.withLock { $0 }
            let window = failed.last.map { killed.duration(to: $0) } ?? .zero
            print("cluster failover: \(failed.count) failed writes, the last \(window) after the kill; \(acknowledged.withLock { $0.count }) acknowledged")
            #expect(window < .seconds(10))
            let all = acknowledged.withLock { $0 }
            let keys = Array(all[..<copied]) + Array(all[afterFailover...])
            let present = try await client.send(["EXISTS"] + keys.map { RedisArgument($0) }).int
            #expect(present == keys.count, "of the writes acknowledged before the WAIT or after the failover")
            #expect(try await client.send(["SET", RedisArgument("\(prefix):after"), "1"]) == .simpleString("OK"))
            try await cluster.start(port: victim)  // rejoins as the new master's replica
            try await cluster.waitUntilClusterIsOK()
        }
    }

    private static func nodeIDs(_ cluster: TestRedisGroup, _ ports: [Int]) async throws -> [Int: String] {
        var ids: [Int: String] = [:]
        for port in ports {
            ids[port] = try await cluster.cli(port: port, ["CLUSTER", "MYID"]).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return ids
    }

    /// A read of a killed master's slot, sent once its replica has taken over but before the
    /// client's slot map says so, fails on the dead node and is sent again to the new master.
    @Test func aReadFindsTheNewMasterAfterAFailover() async throws {
        try await withClusterClient { client, cluster in
            try await cluster.waitUntilClusterIsOK()
            let (victim, replica) = try #require(try await Self.masterWithReplica(cluster))
            // A key of the victim's: written through the client, found on the victim.
            // With its replica's copy (WAIT goes to the node the SET went to): Redis replicates
            // asynchronously, and a write not yet copied dies with its master.
            var key = ""
            repeat {
                key = uniqueName("after-failover")
                let replies = try await client.pipeline([["SET", RedisArgument(key), "kept"], ["WAIT", 1, 5000]])
                #expect(replies == [.simpleString("OK"), .integer(1)])
            } while try await Self.owner(of: RedisSlot.of(key), cluster, [victim]) == nil
            try await cluster.kill(port: victim)
            let replaced = await TestSupport.eventually(timeout: .seconds(30), interval: .milliseconds(50)) {
                ((try? await cluster.masters()) ?? []).contains(replica)
            }
            #expect(replaced)
            // The client last read its slot map before the kill; the read still finds the value.
            #expect(try await client.get(key).map { String(decoding: $0, as: UTF8.self) } == "kept")
            try await cluster.start(port: victim)
            try await cluster.waitUntilClusterIsOK()
        }
    }

    /// A master with a replica attached (a node that just rejoined may still be settling).
    private static func masterWithReplica(_ cluster: TestRedisGroup) async throws -> (master: Int, replica: Int)? {
        for master in try await cluster.masters() {
            if let replica = try await cluster.replica(of: master) { return (master, replica) }
        }
        return nil
    }

    /// The master holding keys of `slot` (the test has just written one there).
    private static func owner(of slot: Int, _ cluster: TestRedisGroup, _ masters: [Int]) async throws -> Int? {
        for port in masters {
            let count = try await cluster.cli(port: port, ["CLUSTER", "COUNTKEYSINSLOT", String(slot)])
            if (Int(count.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0 { return port }
        }
        return nil
    }
}

/// The client against a master and replica watched by three sentinels.
@Suite(.serialized) struct RedisSentinelTests {
    @Test func followsTheSentinelsToANewMaster() async throws {
        let group = try await TestRedisGroup.launchSentinel()
        var configuration = try RedisConfiguration(url: group.url, poolSize: 2)
        configuration.connectTimeout = .seconds(2)
        let client = RedisClient(configuration: configuration, logger: testLogger)
        let subscriber = RedisSubscriber(configuration: configuration, logger: testLogger)
        defer { Task { await client.shutdown(); await subscriber.shutdown() } }
        _ = try await client.send(["SET", "greeting", "hello"])
        #expect(try await group.cli(port: group.ports[0], ["GET", "greeting"]).contains("hello"))

        let killed = ContinuousClock.now
        try await group.kill(port: group.ports[0])
        var lastFailure: ContinuousClock.Instant?
        let promoted = await TestSupport.eventually(timeout: .seconds(30), interval: .milliseconds(50)) {
            do {
                _ = try await client.send(["SET", "greeting", "after"])
                return true
            } catch {
                lastFailure = .now
                return false
            }
        }
        #expect(promoted)
        print("sentinel failover: writes failed for \(lastFailure.map { killed.duration(to: $0) } ?? .zero) after the kill")
        #expect(try await group.cli(port: group.ports[1], ["GET", "greeting"]).contains("after"))
        // The subscriber follows too.
        let channel = uniqueName("sentinel")
        let subscription = await subscriber.subscribeRetrying(channel, bufferSize: 16) { _ in }
        let messages = Collector(try #require(subscription))
        try await client.publish("hi", to: channel)
        #expect(try await messages.wait(for: 1).map(\.text) == ["hi"])
        messages.cancel()
    }
}
