import AuthTokens
import Foundation
import Logging
import RPC
import Redis
import Testing
import TestSupport

/// The in-memory copy of revoked sessions that every service keeps (``SessionRevocations/watch(logger:)``),
/// on a Redis of its own: these tests cut the subscriptions of every client of the server.
@Suite("Revocation watch", .serialized)
struct RevocationWatchTests {
    private static let logger = Logger(label: "revocation-watch-test")

    private struct Setup {
        let server: TestRedis
        let redis: RedisClient
        /// The revoking process (auth).
        let revoker: SessionRevocations
        /// Another process, watching.
        let watcher: SessionRevocations
        let watch: Task<Void, Never>

        func close() async {
            watch.cancel()
            _ = await watch.value
            await redis.shutdown()
        }

        /// How many ZSCOREs Redis has run: the lookups of processes that could not answer from memory.
        func lookups() async throws -> Int {
            let info = try await redis.send(["INFO", "commandstats"]).string ?? ""
            guard let line = info.split(separator: "\r\n").first(where: { $0.hasPrefix("cmdstat_zscore:") }),
                let calls = line.split(separator: ",").first?.split(separator: "=").last
            else { return 0 }
            return Int(calls) ?? 0
        }
    }

    private func setUp(heartbeat: Duration, staleWindow: Duration = SessionRevocations.defaultStaleWindow) async throws -> Setup {
        let server = try await TestServers.startPrivateRedis()
        let redis = RedisClient(configuration: try RedisConfiguration(url: server.url, poolSize: 4), logger: Self.logger)
        let revoker = SessionRevocations(redis: redis, tokenLifetime: .seconds(900))
        let watcher = SessionRevocations(
            redis: redis, tokenLifetime: .seconds(900), heartbeatInterval: heartbeat, staleWindow: staleWindow)
        let watch = Task { await watcher.watch(logger: Self.logger) }
        let setup = Setup(server: server, redis: redis, revoker: revoker, watcher: watcher, watch: watch)
        #expect(await eventually { watcher.isWatching }, "the watcher loads the set and trusts it")
        return setup
    }

    @Test("a revocation reaches a watching process, which then answers from memory")
    func revocationReachesAWatcher() async throws {
        let setup = try await setUp(heartbeat: .seconds(1))
        try await setup.revoker.revoke(sessionIDs: [41, 42])
        #expect(try await eventually { try await setup.watcher.isRevoked(sessionID: 42) })
        let before = try await setup.lookups()
        #expect(try await setup.watcher.isRevoked(sessionID: 41))
        #expect(try await !setup.watcher.isRevoked(sessionID: 43))
        #expect(try await setup.lookups() == before, "answered without asking Redis")
        // The revoking process knows at once.
        try await setup.revoker.revoke(sessionIDs: [44])
        #expect(try await setup.revoker.isRevoked(sessionID: 44))
        await setup.close()
    }

    @Test("a revocation announced while the watcher's subscription was down is loaded when it is back")
    func revocationMissedWhileDisconnected() async throws {
        let setup = try await setUp(heartbeat: .milliseconds(200))
        // The subscriber reconnects after 100 ms at the earliest: the announcement reaches nobody.
        _ = try await setup.redis.send(["CLIENT", "KILL", "TYPE", "pubsub"])
        try await setup.revoker.revoke(sessionIDs: [7])
        // Eventually answered revoked from the watcher's own copy (only its load can have told it).
        // Until then it may still trust its old copy (it has not noticed the cut yet: not revoked)
        // or ask Redis (a lookup), so each try checks both.
        let answeredFromMemory = try await eventually(timeout: .seconds(10)) {
            let before = try await setup.lookups()
            guard try await setup.watcher.isRevoked(sessionID: 7) else { return false }
            return try await setup.lookups() == before
        }
        #expect(answeredFromMemory)
        #expect(setup.watcher.isWatching)
        await setup.close()
    }

    @Test("a watcher whose heartbeat does not come back asks Redis until it does")
    func silentSubscriptionIsDistrusted() async throws {
        let setup = try await setUp(heartbeat: .milliseconds(200))
        // Redis holds every PUBLISH for a while: the subscription is up but carries nothing.
        _ = try await setup.redis.send(["CLIENT", "PAUSE", "1500", "WRITE"])
        #expect(await eventually(timeout: .seconds(1), interval: .milliseconds(10)) { !setup.watcher.isWatching })
        let before = try await setup.lookups()
        #expect(try await !setup.watcher.isRevoked(sessionID: 8))
        #expect(try await setup.lookups() == before + 1, "asked Redis")
        #expect(await eventually(timeout: .seconds(10)) { setup.watcher.isWatching })
        await setup.close()
    }

    @Test("while Redis is down, the copy answers for the stale window after it was last current, then checks fail")
    func staleCopyAnswersWhileRedisIsDown() async throws {
        let setup = try await setUp(heartbeat: .milliseconds(200), staleWindow: .seconds(3))
        try await setup.revoker.revoke(sessionIDs: [51])
        #expect(try await eventually { try await setup.watcher.isRevoked(sessionID: 51) })
        try await setup.server.stop()
        #expect(await eventually(timeout: .seconds(2), interval: .milliseconds(10)) { !setup.watcher.isWatching })
        // Redis cannot answer: the copy does, revoked and live sessions alike.
        #expect(try await setup.watcher.isRevoked(sessionID: 51))
        #expect(try await !setup.watcher.isRevoked(sessionID: 52))
        // Past the window, a check fails closed.
        let failed = await eventually(timeout: .seconds(6), interval: .milliseconds(200)) {
            do {
                _ = try await setup.watcher.isRevoked(sessionID: 52)
                return false
            } catch {
                return true
            }
        }
        #expect(failed)
        try await setup.server.start()
        #expect(await eventually(timeout: .seconds(15)) { setup.watcher.isWatching })
        #expect(try await setup.watcher.isRevoked(sessionID: 51))
        await setup.close()
    }

    @Test("a restored set is whole until it is lost; the mark outlives the sweep and is no session to a watcher")
    func restoredSetIsWholeUntilLost() async throws {
        let setup = try await setUp(heartbeat: .milliseconds(200))
        #expect(try await !setup.revoker.isWhole(), "a set nobody restored is not known whole")
        try await setup.revoker.restore(sessionIDs: [61, 62])
        #expect(try await setup.revoker.isWhole())
        #expect(try await eventually { try await setup.watcher.isRevoked(sessionID: 62) }, "a restore is announced")
        // A revocation sweeps expired members, not the mark.
        try await setup.revoker.revoke(sessionIDs: [63])
        #expect(try await setup.revoker.isWhole())
        // A watcher that loads the set again reads the sessions and skips the mark.
        try await setup.server.stop()
        #expect(await eventually(timeout: .seconds(2), interval: .milliseconds(10)) { !setup.watcher.isWatching })
        try await setup.server.start()
        #expect(await eventually(timeout: .seconds(15)) { setup.watcher.isWatching })
        for id: Int64 in [61, 62, 63] { #expect(try await setup.watcher.isRevoked(sessionID: id)) }
        _ = try await setup.redis.send(["DEL", "aviary:revoked-sessions"])
        #expect(try await !setup.revoker.isWhole(), "a set Redis lost is not whole")
        await setup.close()
    }

    /// With `AVIARY_REDIS_REPLICA_ACKS`, a failover cannot lose an answered revocation: a replica
    /// has it before it is answered, and one no replica confirms fails (`unavailable`, at once).
    @Test("a revocation is answered once a replica has it, and refused when no replica can confirm it")
    func revocationsWaitForAReplica() async throws {
        let group = try await TestRedisGroup.launchSentinel()
        let redis = RedisClient(configuration: try RedisConfiguration(url: group.url, poolSize: 2), logger: Self.logger)
        let revoker = SessionRevocations(redis: redis, tokenLifetime: .seconds(900), replicaAcknowledgements: 1)
        let replica = group.ports[1]
        try await revoker.revoke(sessionIDs: [71])
        let score = try await group.cli(port: replica, ["ZSCORE", "aviary:revoked-sessions", "71"])
        #expect(Double(score.trimmingCharacters(in: .whitespacesAndNewlines)) != nil, "the replica has it: \(score)")

        try await group.kill(port: replica)
        let started = ContinuousClock.now
        do {
            try await revoker.revoke(sessionIDs: [72])
            Issue.record("a revocation no replica confirmed was answered")
        } catch let error as RPCError {
            #expect(error.reason == "unavailable" && error.message.contains("0 of 1 Redis replicas"), "\(error)")
        }
        #expect(started.duration(to: .now) < .seconds(1))
        // The master has it: the caller's retry, once a replica is back, is answered.
        #expect(try await revoker.isRevoked(sessionID: 72))
        try await group.start(port: replica)
        #expect(await eventually(timeout: .seconds(20), interval: .milliseconds(100)) {
            (try? await revoker.revoke(sessionIDs: [72])) != nil
        })
        await redis.shutdown()
    }
}
