import Logging
import Postgres
import TestSupport

/// A client on a fresh database of the shared test server; shut down after `body`, even if it throws.
func withTestClient<T>(
    poolSize: Int = 4, options: PostgresConfiguration.Options = .init(),
    _ body: (PostgresClient) async throws -> T
) async throws -> T {
    let url = try await TestServers.postgres().makeDatabase()
    return try await withTestClient(url: url, poolSize: poolSize, options: options, body)
}

/// A client on `url`; shut down after `body`, even if it throws.
func withTestClient<T>(
    url: String, poolSize: Int = 4, options: PostgresConfiguration.Options = .init(),
    _ body: (PostgresClient) async throws -> T
) async throws -> T {
    var configuration = PostgresConfiguration(url: url, options: options)
    configuration.options.poolSize = poolSize
    let client = try PostgresClient(configuration: configuration, logger: quietLogger)
    do {
        let result = try await body(client)
        await client.shutdown()
        return result
    } catch {
        await client.shutdown()
        throw error
    }
}

let quietLogger = Logger(label: "PostgresTests") { _ in SwiftLogNoOpLogHandler() }

/// Runs `body` and returns the `PostgresError` it throws, or nil if it throws none.
func postgresError(_ body: () async throws -> Void) async -> PostgresError? {
    do {
        try await body()
        return nil
    } catch let error as PostgresError {
        return error
    } catch {
        return nil
    }
}
