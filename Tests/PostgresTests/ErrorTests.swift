import Postgres
import Testing

@Suite("Server errors")
struct ErrorTests {
    @Test func uniqueViolationNamesTheConstraintWithoutLeakingValues() async throws {
        try await withTestClient(poolSize: 1) { client in
            try await client.execute(
                "CREATE TABLE users (id bigint PRIMARY KEY, email text NOT NULL UNIQUE)")
            try await client.execute("INSERT INTO users VALUES ($1, $2)", [1, "ada@example.com"])
            let error = try #require(
                await postgresError {
                    try await client.execute(
                        "INSERT INTO users VALUES ($1, $2)", [2, "ada@example.com"])
                })
            #expect(error.code == .queryFailed)
            #expect(error.isUniqueViolation)
            #expect(!error.isForeignKeyViolation)
            #expect(!error.isRetryableTransactionFailure)
            #expect(error.sqlState == "23505")
            #expect(error.constraint == "users_email_key")
            #expect(error.table == "users")
            #expect(error.schema == "public")
            #expect(!error.description.contains("ada@example.com"))
            #expect(!error.description.contains("INSERT"))
            #expect(String(reflecting: error).contains("ada@example.com"))
            #expect(String(reflecting: error).contains("duplicate key"))
        }
    }

    @Test func foreignKeyAndNotNullViolations() async throws {
        try await withTestClient(poolSize: 1) { client in
            try await client.execute("CREATE TABLE authors (id bigint PRIMARY KEY)")
            try await client.execute(
                "CREATE TABLE posts (id bigint PRIMARY KEY, author bigint NOT NULL REFERENCES authors (id))"
            )
            let foreignKey = try #require(
                await postgresError { try await client.execute("INSERT INTO posts VALUES (1, 99)") }
            )
            #expect(foreignKey.isForeignKeyViolation)
            #expect(foreignKey.constraint == "posts_author_fkey")
            let notNull = try #require(
                await postgresError {
                    try await client.execute("INSERT INTO posts VALUES (1, $1)", [Int64?.none])
                })
            #expect(notNull.sqlState == "23502")
            #expect(notNull.column == "author")
        }
    }

    @Test func syntaxErrorAndRecovery() async throws {
        try await withTestClient(poolSize: 1) { client in
            let error = try #require(await postgresError { _ = try await client.query("SELEC 1") })
            #expect(error.code == .queryFailed)
            #expect(error.sqlState == "42601")
            #expect(try await client.query("SELECT 2").first?.decode(Int.self, at: 0) == 2)
        }
    }

    @Test func invalidConfigurationIsRejectedUpFront() {
        #expect(throws: PostgresError.self) {
            _ = try PostgresClient(
                configuration: .init(url: "host=127.0.0.1 no_such_option=1"), logger: quietLogger)
        }
        var options = PostgresConfiguration.Options()
        options.poolSize = 0
        #expect(throws: PostgresError.self) {
            _ = try PostgresClient(
                configuration: .init(url: "postgres://127.0.0.1/x", options: options),
                logger: quietLogger)
        }
        options = PostgresConfiguration.Options()
        options.readerThreads = 0
        #expect(throws: PostgresError.self) {
            _ = try PostgresClient(
                configuration: .init(url: "postgres://127.0.0.1/x", options: options),
                logger: quietLogger)
        }
    }

    @Test func unreachableServerIsAConnectionFailure() async throws {
        // Port 1 on loopback refuses connections at once.
        try await withTestClient(url: "postgres://nobody:secret@127.0.0.1:1/none", poolSize: 1) {
            client in
            let error = try #require(await postgresError { _ = try await client.query("SELECT 1") })
            #expect(error.code == .connectionFailed)
            #expect(!error.description.contains("secret"))
            #expect(await client.isReachable() == false)
        }
    }
}
