import Postgres
import TestSupport
import Testing

/// A Postgres that stops answering (SIGSTOP on the server and its backends) costs a caller its own
/// wait limit or the statement timeout, and then nothing while the breaker is open; a statement that
/// is merely slow while the server answers others opens no breaker.
///
/// The bounds on time are loose, for a loaded machine: each server stays paused until after the wait
/// it bounds, so a wait that ends at all ended by its limit.
@Suite("Deadlines and the breaker", .serialized)
struct DeadlineTests {
    @Test func aStalledServerCostsTheCallersLimitThenAFastRefusalUntilItAnswers() async throws {
        let server = try await TestServers.startPrivatePostgres()
        let url = try await server.makeDatabase()
        var options = PostgresConfiguration.Options()
        options.breakerPause = .seconds(2)
        try await withTestClient(url: url, poolSize: 2, options: options) { client in
            _ = try await client.query("SELECT 1")
            await server.pause()
            let started = ContinuousClock.now
            let late = await postgresError {
                _ = try await PostgresClient.waiting(atMost: .milliseconds(200)) { try await client.query("SELECT 1") }
            }
            let waited = started.duration(to: .now)
            #expect(late?.code == .timeout)
            #expect(late?.isUnreachable == true)
            #expect(waited >= .milliseconds(200) && waited < .seconds(5), "waited \(waited)")

            // The breaker is open: no wait at all, for writes too.
            let refused = await postgresError { try await client.execute("CREATE TABLE t (id int)") }
            #expect(refused?.code == .connectionFailed)

            await server.resume()
            let answered = await eventually(timeout: .seconds(5), interval: .milliseconds(50)) {
                (try? await client.query("SELECT 41 + 1").first?.decode(Int.self, at: 0)) == 42
            }
            #expect(answered)
        }
        try await server.stop()
    }

    @Test func theStatementTimeoutAbandonsTheConnectionAndThePoolOpensAnother() async throws {
        let server = try await TestServers.startPrivatePostgres()
        let url = try await server.makeDatabase()
        var options = PostgresConfiguration.Options()
        options.statementTimeout = .milliseconds(300)
        try await withTestClient(url: url, poolSize: 1, options: options) { client in
            let before = try #require(try await client.query("SELECT pg_backend_pid()").first).decode(Int32.self, at: 0)
            await server.pause()
            let started = ContinuousClock.now
            let late = await postgresError { try await client.execute("CREATE TABLE t (id int)") }
            let waited = started.duration(to: .now)
            #expect(late?.code == .timeout)
            #expect(waited >= .milliseconds(300) && waited < .seconds(5), "waited \(waited)")
            await server.resume()
            let after = await eventually(timeout: .seconds(5), interval: .milliseconds(50)) {
                guard let pid = try? await client.query("SELECT pg_backend_pid()").first?.decode(Int32.self, at: 0) else {
                    return false
                }
                #expect(pid != before, "the abandoned connection was used again")
                return true
            }
            #expect(after)
        }
        try await server.stop()
    }

    @Test func aSlowStatementWhileTheServerAnswersOthersOpensNoBreaker() async throws {
        try await withTestClient(poolSize: 3) { client in
            let others = Task {
                var refusals = 0
                for _ in 0..<40 {
                    if await postgresError({ _ = try await client.query("SELECT 1") })?.code == .connectionFailed { refusals += 1 }
                    try? await Task.sleep(for: .milliseconds(10))
                }
                return refusals
            }
            let late = await postgresError {
                _ = try await PostgresClient.waiting(atMost: .milliseconds(150)) { try await client.query("SELECT pg_sleep(0.5)") }
            }
            #expect(late?.code == .timeout)
            #expect(await others.value == 0)
        }
    }

    @Test func migrationsRunPastTheStatementTimeout() async throws {
        var options = PostgresConfiguration.Options()
        options.statementTimeout = .milliseconds(200)
        let migrator = PostgresMigrator(
            schema: "slow", migrations: [PostgresMigration(version: 1, name: "slow", sql: "SELECT pg_sleep(0.5)")])
        let applied = try await withTestClient(poolSize: 1, options: options) { try await migrator.migrate($0) }
        #expect(applied == [1])
    }
}
