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
            await expectStatementsStartedTogetherShareAConnection(on: client.executors[0], client)
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
