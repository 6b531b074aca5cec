import Foundation
@testable import TestSupport
import Testing

/// The test harness itself: real Postgres and Redis servers, started, used, stopped and restarted.
@Suite("Test harness")
struct HarnessTests {
    @Test("the shared Postgres gives each test a database of its own")
    func sharedPostgresMakesDatabases() async throws {
        let postgres = try await TestServers.postgres()
        let first = try await postgres.makeDatabase()
        let second = try await postgres.makeDatabase()
        #expect(first != second)
        #expect(first.hasPrefix("postgres://aviary@127.0.0.1:\(postgres.port)/"))
        for url in [first, second] {
            #expect(try await postgres.psql("SELECT 1", url: url) == "1")
        }
        let again = try await TestServers.postgres()
        #expect(again === postgres)
    }

    @Test("the shared Postgres runs with the settings the tests rely on")
    func sharedPostgresSettings() async throws {
        let postgres = try await TestServers.postgres()
        #expect(try await postgres.psql("SHOW fsync") == "off")
        #expect(try await postgres.psql("SHOW max_connections") == "300")
        #expect(
            try await postgres.psql("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
                == "t")
    }

    @Test("the shared Redis answers PING")
    func sharedRedisAnswersPing() async throws {
        let redis = try await TestServers.redis()
        #expect(redis.url == "redis://127.0.0.1:\(redis.port)")
        #expect(try await redis.cli(["PING"]) == "PONG")
        #expect(try await TestServers.redis() === redis)
    }

    @Test("a private Postgres stops and starts again on the same port, keeping its data")
    func privatePostgresRestarts() async throws {
        let postgres = try await TestServers.startPrivatePostgres()
        let url = try await postgres.makeDatabase()
        try await postgres.psql("CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)", url: url)
        try await postgres.stop()
        await #expect(throws: (any Error).self) { try await postgres.psql("SELECT 1", url: url) }
        try await postgres.start()
        #expect(try await postgres.psql("SELECT n FROM kept", url: url) == "42")
    }

    @Test("a private Redis stops and starts again on the same port")
    func privateRedisRestarts() async throws {
        let redis = try await TestServers.startPrivateRedis()
        let port = redis.port
        let clock = ContinuousClock()
        let stopping = try await clock.measure { try await redis.stop() }
        // A server that ignored SIGTERM would only end with the SIGKILL that follows 30 s later.
        #expect(stopping < .seconds(5))
        await #expect(throws: (any Error).self) { try await redis.cli(["PING"]) }
        try await redis.start()
        #expect(redis.port == port)
        #expect(try await redis.cli(["PING"]) == "PONG")
    }

    @Test("freePort gives a port that can be bound")
    func freePortIsFree() throws {
        let port = try freePort()
        #expect((1024...65535).contains(port))
    }

    @Test("a child that ended is seen at once, though a process it started keeps Foundation's socket open")
    func endedChildSeenWhileItsDescendantRuns() async throws {
        let folder = try temporaryFolderForThisRun("harness-zombie")
        let child = try ChildProcess(["/bin/sh", "-c", "sleep 30 & echo $! > \(folder)/sleeper; exit 3"])
        defer {
            if let sleeper = try? String(contentsOfFile: "\(folder)/sleeper", encoding: .utf8),
                let pid = Int32(sleeper.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                kill(pid, SIGKILL)
            }
        }
        let started = ContinuousClock.now
        #expect(await child.waitForExit(timeout: .seconds(5)) == 3)
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    /// Read from `/proc` while the child is a zombie, then reaped by Foundation before its
    /// termination handler records it, the status went back to nil: 447 and 956 such reads in two runs
    /// of this test before the fix, and a `psql` reported as not finishing within 60 s in CI.
    @Test("an ended child's exit status, once seen, stays seen while Foundation reaps it")
    func exitStatusStaysSeen() async throws {
        var lapses = 0
        for _ in 0..<100 {
            let child = try ChildProcess(["/bin/sh", "-c", "exit 7"])
            try #require(await eventually(timeout: .seconds(5), interval: .zero) { child.status != nil })
            for _ in 0..<2000 where child.status != 7 { lapses += 1 }
        }
        #expect(lapses == 0)
    }
}
