import Postgres
import TestSupport
import Testing

@Suite("Connection pool")
struct PoolTests {
    @Test func twoHundredConcurrentQueriesShareFourConnections() async throws {
        try await withTestClient(poolSize: 4) { client in
            let backends = try await withThrowingTaskGroup(of: (Int, Int32).self) { group in
                for index in 0..<200 {
                    group.addTask {
                        let row = try #require(
                            try await client.query(
                                "SELECT $1::int8, pg_backend_pid() FROM pg_sleep(0.002)", [index]
                            ).first)
                        return (try row.decode(Int.self, at: 0), try row.decode(Int32.self, at: 1))
                    }
                }
                var seen: [Int] = []
                var pids = Set<Int32>()
                for try await (index, pid) in group {
                    seen.append(index)
                    pids.insert(pid)
                }
                #expect(seen.sorted() == Array(0..<200))
                return pids
            }
            #expect(backends.count <= 4)
        }
    }

    @Test func waitingForASlotTimesOut() async throws {
        var options = PostgresConfiguration.Options()
        options.poolWaitTimeout = .milliseconds(100)
        try await withTestClient(poolSize: 1, options: options) { client in
            let gate = Gate()
            async let holder: Void = client.withConnection { _ in await gate.enterAndWait() }
            try await gate.waitUntilEntered()
            let codes = await withTaskGroup(of: PostgresError.Code?.self) { group in
                for _ in 0..<5 {
                    group.addTask {
                        await postgresError { _ = try await client.query("SELECT 1") }?.code
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(codes == Array(repeating: .timeout, count: 5))
            gate.open()
            try await holder
            #expect(try await client.query("SELECT 1").count == 1)
        }
    }

    @Test func aCancelledWaiterGivesUpItsPlace() async throws {
        try await withTestClient(poolSize: 1) { client in
            let gate = Gate()
            async let holder: Void = client.withConnection { _ in await gate.enterAndWait() }
            try await gate.waitUntilEntered()
            let waiter = Task { try await client.query("SELECT 1") }
            try await Task.sleep(for: .milliseconds(50))
            waiter.cancel()
            await #expect(throws: CancellationError.self) { _ = try await waiter.value }
            gate.open()
            try await holder
            // The slot was not lost: the pool of one still serves.
            #expect(try await client.query("SELECT 1").count == 1)
        }
    }

    @Test func writesLeaveAQuarterOfThePoolToReads() async throws {
        try await withTestClient(poolSize: 4) { client in
            // Connections lent whole count as writes: three of four is all writes may hold.
            let gates = (0..<3).map { _ in Gate() }
            let holders = gates.map { gate in Task { try await client.withConnection { _ in await gate.enterAndWait() } } }
            for gate in gates { try await gate.waitUntilEntered() }
            let write = Task { try await client.execute("CREATE TABLE later (id bigint)") }
            // The fourth slot is free, but kept for reads: a read gets it while the write waits.
            let read = await outcome(within: .seconds(5)) {
                try await client.query("SELECT to_regclass('later') IS NULL")[0].decode(Bool.self, at: 0)
            }
            let writeWaited = try #require(read, "the read found no free slot").get()
            #expect(writeWaited, "the write took the slot kept for reads")
            for gate in gates { gate.open() }
            for holder in holders { try await holder.value }
            _ = try await write.value
            #expect(try await client.query("SELECT to_regclass('later') IS NOT NULL")[0].decode(Bool.self, at: 0))
        }
    }

    @Test func shutdownFailsWaitersAndLaterCalls() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        var configuration = PostgresConfiguration(url: url)
        configuration.options.poolSize = 1
        let client = try PostgresClient(configuration: configuration, logger: quietLogger)
        let gate = Gate()
        async let holder = client.withConnection { connection in
            await gate.enterAndWait()
            return try await connection.query("SELECT 1").count
        }
        try await gate.waitUntilEntered()
        async let waiter = postgresError { _ = try await client.query("SELECT 1") }
        try await Task.sleep(for: .milliseconds(50))
        async let shutdown: Void = client.shutdown()
        #expect(await waiter?.code == .poolClosed)
        // The statement already running finishes; shutdown waits for it.
        gate.open()
        #expect(try await holder == 1)
        await shutdown
        #expect(await postgresError { _ = try await client.query("SELECT 1") }?.code == .poolClosed)
        #expect(await client.isReachable() == false)
    }

    @Test func concurrentShutdownsAllReturn() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        let client = try PostgresClient(configuration: PostgresConfiguration(url: url), logger: quietLogger)
        #expect(try await client.query("SELECT 1").count == 1)
        let finished = await outcome(within: .seconds(10), of: {
            await withDiscardingTaskGroup { group in
                for _ in 0..<4 { group.addTask { await client.shutdown() } }
            }
        })
        #expect(finished != nil, "every shutdown() returns, not only the last to wait")
    }

    @Test func executeReportsAffectedRows() async throws {
        try await withTestClient(poolSize: 1) { client in
            try await client.execute(
                "CREATE TABLE items (id bigint PRIMARY KEY, seen bool NOT NULL DEFAULT false)")
            #expect(
                try await client.execute("INSERT INTO items (id) SELECT generate_series(1, 5)") == 5
            )
            #expect(
                try await client.execute("UPDATE items SET seen = true WHERE id > $1", [2]) == 3)
            #expect(try await client.execute("DELETE FROM items WHERE id = $1", [42]) == 0)
        }
    }

    @Test func preparedStatementsSurviveSchemaChanges() async throws {
        try await withTestClient(poolSize: 1) { client in
            try await client.execute("CREATE TABLE items (id bigint)")
            try await client.execute("INSERT INTO items VALUES (1)")
            #expect(try await client.query("SELECT * FROM items").columns == ["id"])
            try await client.execute("ALTER TABLE items ADD COLUMN name text DEFAULT 'x'")
            #expect(try await client.query("SELECT * FROM items").columns == ["id", "name"])
        }
    }

    @Test(arguments: [0, 2])
    func smallOrDisabledStatementCacheStillWorks(cacheSize: Int) async throws {
        var options = PostgresConfiguration.Options()
        options.preparedStatementCacheSize = cacheSize
        try await withTestClient(poolSize: 1, options: options) { client in
            for round in 0..<3 {
                for width in 1...5 {
                    let sql =
                        "SELECT " + (1...width).map { "$\($0)::int8" }.joined(separator: " + ")
                    let sum = try await client.query(sql, Array(repeating: round, count: width))
                    #expect(try sum.first?.decode(Int.self, at: 0) == round * width)
                }
            }
        }
    }

    @Test func sessionsUseUTCAndISODates() async throws {
        try await withTestClient(poolSize: 1) { client in
            let row = try #require(
                try await client.query(
                    "SELECT current_setting('TimeZone'), current_setting('DateStyle'), current_setting('client_encoding'), current_setting('application_name')"
                ).first)
            #expect(try row.decode(String.self, at: 0) == "UTC")
            #expect(try row.decode(String.self, at: 1).hasPrefix("ISO"))
            #expect(try row.decode(String.self, at: 2) == "UTF8")
            #expect(try row.decode(String.self, at: 3) == "aviary")
        }
    }
}

@Suite("Reconnection", .serialized)
struct ReconnectionTests {
    @Test func recoversAfterTheServerRestarts() async throws {
        let server = try await TestServers.startPrivatePostgres()
        let url = try await server.makeDatabase()
        try await withTestClient(url: url, poolSize: 2) { client in
            try await client.execute("CREATE TABLE items (id bigint)")
            // Open both connections so that both go stale.
            async let first = client.query("SELECT pg_sleep(0.1)")
            async let second = client.query("SELECT pg_sleep(0.1)")
            _ = try await (first, second)
            #expect(await client.isReachable())

            try await server.stop()
            let down = try #require(await postgresError { _ = try await client.query("SELECT 1") })
            #expect(down.code == .connectionFailed)
            #expect(await client.isReachable() == false)

            try await server.start()
            #expect(await client.isReachable())
            #expect(try await client.execute("INSERT INTO items VALUES ($1)", [1]) == 1)
            let inserted = try await client.transaction {
                try await $0.query("SELECT count(*) FROM items").first?.decode(Int.self, at: 0)
            }
            #expect(inserted == 1)
        }
        try await server.stop()
    }

    @Test func replacesConnectionsTerminatedByTheServer() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        try await withTestClient(url: url, poolSize: 1) { client in
            let pid = try #require(try await client.query("SELECT pg_backend_pid()").first).decode(
                Int32.self, at: 0)
            let terminated = try await withTestClient(url: url, poolSize: 1) { other in
                try await other.query("SELECT pg_terminate_backend($1)", [pid]).first?.decode(
                    Bool.self, at: 0)
            }
            #expect(terminated == true)
            // The pooled connection is dead; the next statement still succeeds on a new one.
            let newPid = try #require(try await client.query("SELECT pg_backend_pid()").first)
                .decode(Int32.self, at: 0)
            #expect(newPid != pid)
        }
    }

    @Test func aTransactionAfterTheServerClosedAnIdleConnectionGetsANewOne() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        try await withTestClient(url: url, poolSize: 1) { client in
            let pid = try #require(try await client.query("SELECT pg_backend_pid()").first).decode(
                Int32.self, at: 0)
            try await withTestClient(url: url, poolSize: 1) { other in
                _ = try await other.query("SELECT pg_terminate_backend($1)", [pid])
                while try await !other.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pid]).isEmpty {
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            // The backend has gone: its FATAL message and the end of the stream reached the idle
            // connection, which the reactor read. A transaction is never run again on a broken
            // connection, so it succeeds only if the pool knew, without being told by a failure.
            try await Task.sleep(for: .milliseconds(50))
            let newPid = try await client.transaction {
                try #require(try await $0.query("SELECT pg_backend_pid()").first).decode(Int32.self, at: 0)
            }
            #expect(newPid != pid)
        }
    }

    @Test func aStatementCutOffByATerminatedBackendRunsAgainOnce() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        try await withTestClient(url: url, poolSize: 1) { client in
            let pid = try #require(try await client.query("SELECT pg_backend_pid()").first).decode(
                Int32.self, at: 0)
            // Sleeps only on the first backend, so the run that is cut off is slow and the rerun fast.
            async let statement = client.query(
                "SELECT pg_backend_pid() FROM pg_sleep(CASE WHEN pg_backend_pid() = $1 THEN 30 ELSE 0 END)",
                [pid])
            try await terminateWhenActive(pid, url: url)
            let rerunPid = try #require(try await statement.first).decode(Int32.self, at: 0)
            #expect(rerunPid != pid)
        }
    }

    /// A write may have committed before its connection broke: it is never sent again.
    @Test func aWriteCutOffByATerminatedBackendIsNotRunAgain() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        try await withTestClient(url: url, poolSize: 1) { client in
            try await client.execute("CREATE TABLE writes (pid int)")
            let pid = try #require(try await client.query("SELECT pg_backend_pid()").first).decode(
                Int32.self, at: 0)
            async let write = postgresError {
                try await client.execute(
                    "INSERT INTO writes SELECT pg_backend_pid() FROM pg_sleep(CASE WHEN pg_backend_pid() = $1 THEN 30 ELSE 0 END)",
                    [pid])
            }
            try await terminateWhenActive(pid, url: url)
            #expect(await write?.code == .connectionFailed)
            #expect(try await client.query("SELECT count(*) FROM writes").first?.decode(Int.self, at: 0) == 0)
        }
    }

    @Test func aTransactionCutOffByATerminatedBackendIsNotRunAgain() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        try await withTestClient(url: url, poolSize: 1) { client in
            try await client.execute("CREATE TABLE runs (n int)")
            let pid = try #require(try await client.query("SELECT pg_backend_pid()").first).decode(
                Int32.self, at: 0)
            let runs = Counter()
            async let transaction = postgresError {
                try await client.transaction { connection in
                    _ = runs.increment()
                    try await connection.execute("INSERT INTO runs VALUES (1)")
                    _ = try await connection.query("SELECT pg_sleep(30)")
                }
            }
            try await terminateWhenActive(pid, url: url)
            #expect(await transaction?.code == .connectionFailed)
            #expect(runs.value == 1)
            #expect(
                try await client.query("SELECT count(*) FROM runs").first?.decode(Int.self, at: 0)
                    == 0)
        }
    }

    /// Terminates backend `pid` once it is running a `pg_sleep`.
    private func terminateWhenActive(_ pid: Int32, url: String) async throws {
        let terminated = try await withTestClient(url: url, poolSize: 1) { other in
            while try await other.query(
                "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query LIKE '%pg_sleep%'",
                [pid]
            ).isEmpty {
                try await Task.sleep(for: .milliseconds(10))
            }
            return try await other.query("SELECT pg_terminate_backend($1)", [pid]).first?.decode(
                Bool.self, at: 0)
        }
        #expect(terminated == true)
    }
}
