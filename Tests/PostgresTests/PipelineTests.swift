import NIOPosix
@testable import Postgres
import RPC
import TestSupport
import Testing

@Suite("Pipelined statements")
struct PipelineTests {
    @Test func statementsOfOneTickShareAConnectionAndFailAlone() async throws {
        try await withTestClient(poolSize: 4) { client in
            // An idle connection is open already: the first caller takes it without waiting. Run off
            // the loops, the statement has the connection to itself and gives it back before it
            // returns. On a loop, an answer read before the statement's task had suspended lets the
            // task go on within its tick, and the end of the tick then gives the connection back
            // from another task, later: in one CI run the callers below found none idle, and four
            // of them opened one each.
            try await client.execute("SELECT 1")
            let loop = EventLoopTaskExecutor(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
            await expectStatementsStartedTogetherShareAConnection(on: loop, client)
        }
    }

    @Test func aStatementDoesNotWaitBehindOneSentInAnEarlierTick() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        try await withTestClient(url: url, poolSize: 1) { holder in
            // The holder's one pooled session keeps the lock until it unlocks it.
            try await holder.execute("SELECT pg_advisory_lock(7)")
            try await withTestClient(url: url, poolSize: 4) { client in
                let executor = EventLoopTaskExecutor(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
                let blocked = Task(executorPreference: executor) {
                    try await client.query("SELECT pg_backend_pid(), pg_advisory_lock(7)")[0].decode(Int32.self, at: 0)
                }
                // Until the blocked statement waits on the lock: it was sent, so the next one leaves in
                // a later tick (a fixed pause let both share one tick on a loaded machine).
                let waiting = try await eventually {
                    try await holder.query(
                        """
                        SELECT count(*) FROM pg_locks
                        WHERE locktype = 'advisory' AND objid = 7 AND NOT granted
                          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                        """)[0].decode(Int64.self, at: 0) > 0
                }
                #expect(waiting, "the blocked statement never waited on the lock")
                // Sent from the same loop in a later tick: behind the blocked statement it would get
                // no answer until the lock is released.
                let quick = await outcome(within: .seconds(30)) {
                    try await Task(executorPreference: executor) {
                        try await client.query("SELECT pg_backend_pid()")[0].decode(Int32.self, at: 0)
                    }.value
                }
                try await holder.execute("SELECT pg_advisory_unlock(7)")
                let blockedPid = try await blocked.value
                let quickPid = try #require(try quick?.get(), "the statement waited behind the blocked one")
                #expect(quickPid != blockedPid)
            }
        }
    }

    @Test func readsDoNotWaitBehindAWriteOfTheSameTick() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        try await withTestClient(url: url, poolSize: 1) { holder in
            try await holder.execute("SELECT pg_advisory_lock(8)")
            try await withTestClient(url: url, poolSize: 4) { client in
                try await client.execute("CREATE TABLE items (id bigint)")
                let loop = EventLoopTaskExecutor(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
                // Started in one tick of one loop, the write first: it waits for the lock, as a
                // write waits for a slow disk to flush its commit.
                let (write, reads) = await Task(executorPreference: loop) {
                    let write = Task(executorPreference: loop) {
                        try await client.execute("INSERT INTO items SELECT 1 FROM pg_advisory_lock(8)")
                    }
                    let reads = (0..<4).map { _ in
                        Task(executorPreference: loop) { try await client.query("SELECT count(*) FROM items")[0].decode(Int.self, at: 0) }
                    }
                    return (write, reads)
                }.value
                let counted = await outcome(within: .seconds(30)) {
                    var counts: [Int] = []
                    for read in reads { counts.append(try await read.value) }
                    return counts
                }
                try await holder.execute("SELECT pg_advisory_unlock(8)")
                #expect(try #require(counted, "the reads waited behind the write").get() == [0, 0, 0, 0])
                #expect(try await write.value == 1)
            }
        }
    }

    @Test func aStatementWhosePreparationFailedIsPreparedAgain() async throws {
        try await withTestClient(poolSize: 1) { client in
            // Prepared with its first run, in the same round trip, on the pool's one connection.
            let missing = await postgresError { _ = try await client.query("SELECT count(*) FROM later") }
            #expect(missing?.sqlState == "42P01")
            let inTransaction = await postgresError {
                try await client.transaction { connection in
                    _ = try await connection.query("SELECT count(*) FROM later")
                }
            }
            #expect(inTransaction?.sqlState == "42P01")
            try await client.execute("CREATE TABLE later (id bigint)")
            #expect(try await client.query("SELECT count(*) FROM later")[0].decode(Int.self, at: 0) == 0)
            let counted = try await client.transaction { connection in
                try await connection.query("SELECT count(*) FROM later")[0].decode(Int.self, at: 0)
            }
            #expect(counted == 0)
        }
    }

    @Test func aTransactionSendsItsBeginWithItsFirstStatement() async throws {
        try await withTestClient(poolSize: 1) { client in
            // The first statement runs inside the transaction: both see one transaction id.
            let ids = try await client.transaction { connection in
                let first = try await connection.query("SELECT txid_current()")[0].decode(Int64.self, at: 0)
                let second = try await connection.query("SELECT txid_current()")[0].decode(Int64.self, at: 0)
                return (first, second)
            }
            #expect(ids.0 == ids.1)
            // The isolation level leaves with it too.
            let level = try await client.transaction(isolation: .serializable) { connection in
                try await connection.query("SHOW transaction_isolation")[0].decode(String.self, at: 0)
            }
            #expect(level == "serializable")
            // A body that runs nothing sends nothing, and leaves the connection outside a transaction.
            #expect(try await client.transaction { _ in 7 } == 7)
            // So does a first statement that fails: its transaction is rolled back.
            try await client.execute("CREATE TABLE items (id bigint PRIMARY KEY)")
            let error = await postgresError {
                try await client.transaction { connection in
                    _ = try await connection.execute("INSERT INTO items VALUES (1 / 0)")
                }
            }
            #expect(error?.sqlState == "22012")
            let outside = try await client.withConnection { connection in
                try await connection.query("SELECT txid_current_if_assigned() IS NULL, now() = statement_timestamp()")
            }
            #expect(try outside[0].decode(Bool.self, at: 0))
        }
    }
}
