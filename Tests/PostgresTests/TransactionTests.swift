import Postgres
import Testing

@Suite("Transactions")
struct TransactionTests {
    struct Abort: Error {}

    @Test func commitsWhenTheBodyReturns() async throws {
        try await withTestClient { client in
            try await client.execute("CREATE TABLE items (id bigint PRIMARY KEY)")
            let inserted = try await client.transaction { connection in
                try await connection.execute("INSERT INTO items VALUES (1), (2), (3)")
            }
            #expect(inserted == 3)
            #expect(
                try await client.query("SELECT count(*) FROM items").first?.decode(Int.self, at: 0)
                    == 3)
        }
    }

    @Test func rollsBackWhenTheBodyThrows() async throws {
        try await withTestClient(poolSize: 1) { client in
            try await client.execute("CREATE TABLE items (id bigint PRIMARY KEY)")
            await #expect(throws: Abort.self) {
                try await client.transaction { connection in
                    try await connection.execute("INSERT INTO items VALUES (1)")
                    throw Abort()
                }
            }
            #expect(
                try await client.query("SELECT count(*) FROM items").first?.decode(Int.self, at: 0)
                    == 0)
        }
    }

    @Test func aSwallowedStatementFailureCannotCommit() async throws {
        try await withTestClient(poolSize: 1) { client in
            try await client.execute("CREATE TABLE items (id bigint PRIMARY KEY)")
            let error = try #require(
                await postgresError {
                    try await client.transaction { connection in
                        try await connection.execute("INSERT INTO items VALUES (1)")
                        _ = try? await connection.execute("INSERT INTO items VALUES (1)")
                    }
                })
            #expect(error.sqlState == "25P02")
            #expect(
                try await client.query("SELECT count(*) FROM items").first?.decode(Int.self, at: 0)
                    == 0)
        }
    }

    @Test func aTransactionLeftOpenByWithConnectionIsRolledBack() async throws {
        try await withTestClient(poolSize: 1) { client in
            try await client.execute("CREATE TABLE items (id bigint PRIMARY KEY)")
            try await client.withConnection { connection in
                try await connection.execute("BEGIN")
                try await connection.execute("INSERT INTO items VALUES (1)")
            }
            #expect(
                try await client.query("SELECT count(*) FROM items").first?.decode(Int.self, at: 0)
                    == 0)
        }
    }

    /// Two SERIALIZABLE transactions that each read both rows and then write one (write skew):
    /// Postgres lets only one commit. The other fails with 40001 and must be run again.
    private static func runWriteSkew(_ client: PostgresClient) async throws -> Int {
        try await client.execute("CREATE TABLE doctors (id int PRIMARY KEY, on_call int NOT NULL)")
        try await client.execute("INSERT INTO doctors VALUES (1, 0), (2, 0)")
        let barrier = Barrier(parties: 2)
        let attempts = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in [1, 2] {
                group.addTask {
                    try await client.transaction(isolation: .serializable) { connection in
                        let attempt = attempts.increment()
                        _ = try await connection.query("SELECT sum(on_call) FROM doctors")
                        // Only the first two attempts meet, so that both read before either writes.
                        if attempt <= 2 { await barrier.arriveAndWait() }
                        try await connection.execute(
                            "UPDATE doctors SET on_call = on_call + 1 WHERE id = $1", [id])
                    }
                }
            }
            try await group.waitForAll()
        }
        return attempts.value
    }

    @Test func retriesOnSerializationFailure() async throws {
        try await withTestClient(poolSize: 2) { client in
            let attempts = try await Self.runWriteSkew(client)
            #expect(attempts >= 3)
            #expect(
                try await client.query("SELECT sum(on_call) FROM doctors").first?.decode(
                    Int.self, at: 0) == 2)
        }
    }

    @Test func surfacesSerializationFailureWhenRetriesAreExhausted() async throws {
        var options = PostgresConfiguration.Options()
        options.transactionRetryLimit = 0
        try await withTestClient(poolSize: 2, options: options) { client in
            let error = try #require(
                await postgresError { _ = try await Self.runWriteSkew(client) })
            #expect(error.sqlState == "40001")
            #expect(error.isRetryableTransactionFailure)
        }
    }
}
