import Foundation
@testable import Postgres
import TestSupport
import Testing

@Suite("Tasks on the client's reader threads")
struct ReaderThreadTests {
    /// The name of the thread the caller runs on.
    private static func threadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    @Test func aTaskOnAReaderThreadIsResumedThereAfterEachStatement() async throws {
        var options = PostgresConfiguration.Options()
        options.readerThreads = 2
        try await withTestClient(poolSize: 4, options: options) { client in
            #expect(client.executors.count == 2)
            // Four tasks on each reader thread, their statements interleaved on the pool's connections.
            let threads = try await withThrowingTaskGroup(of: Set<String>.self) { group in
                for task in 0..<8 {
                    group.addTask(executorPreference: client.executors[task % 2]) {
                        var seen: Set<String> = []
                        for round in 0..<50 {
                            let sum = try await client.query("SELECT $1::int + $2::int", [task, round]).first?
                                .decode(Int.self, at: 0)
                            #expect(sum == task + round)
                            seen.insert(Self.threadName())
                        }
                        let inTransaction = try await client.transaction { connection in
                            try await connection.execute("CREATE TEMP TABLE t (n int) ON COMMIT DROP")
                            try await connection.execute("INSERT INTO t VALUES (1), (2)")
                            return try await connection.query("SELECT count(*) FROM t").first?.decode(Int.self, at: 0)
                        }
                        #expect(inTransaction == 2)
                        seen.insert(Self.threadName())
                        return seen
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.formUnion($1) }
            }
            #expect(threads == ["aviary-postgres"])
        }
    }

    @Test func statementsOfOnePassShareAConnectionAndFailAlone() async throws {
        var options = PostgresConfiguration.Options()
        options.readerThreads = 1
        try await withTestClient(poolSize: 4, options: options) { client in
            // One idle connection, watched by the only reader thread, for the first caller to take.
            try await client.execute("SELECT 1")
            let outcomes = await Task(executorPreference: client.executors[0]) {
                // Added from the reader thread, the callers all start within one pass.
                await withTaskGroup(of: (Int, Result<Int32, any Error>).self) { group in
                    for caller in 0..<PostgresClient.gatheringLimit {
                        group.addTask {
                            do {
                                // Caller 5 divides by zero; the others are untouched by its failure.
                                let rows = try await client.query(
                                    "SELECT pg_backend_pid() + 0 / $1::int", [caller == 5 ? 0 : 1])
                                return (caller, .success(try rows[0].decode(Int32.self, at: 0)))
                            } catch {
                                return (caller, .failure(error))
                            }
                        }
                    }
                    var outcomes: [Int: Result<Int32, any Error>] = [:]
                    for await (caller, outcome) in group { outcomes[caller] = outcome }
                    return outcomes
                }
            }.value
            let pids = Set(outcomes.values.compactMap { try? $0.get() })
            #expect(pids.count == 1, "the statements of one pass ran on \(pids.count) connections")
            #expect(outcomes.values.filter { (try? $0.get()) != nil }.count == PostgresClient.gatheringLimit - 1)
            guard case .failure(let error) = outcomes[5] else {
                Issue.record("the division by zero succeeded")
                return
            }
            #expect((error as? PostgresError)?.sqlState == "22012")
        }
    }

    @Test func aTaskEnqueuedAfterShutdownStillRuns() async throws {
        var options = PostgresConfiguration.Options()
        options.readerThreads = 1
        var configuration = PostgresConfiguration(url: try await TestServers.postgres().makeDatabase(), options: options)
        configuration.options.poolSize = 1
        let client = try PostgresClient(configuration: configuration, logger: quietLogger)
        try await client.execute("SELECT 1")
        await client.shutdown()
        // The thread has ended; the task runs on Swift's global executor instead of hanging.
        let value = await Task(executorPreference: client.executors[0]) { 42 }.value
        #expect(value == 42)
    }
}
