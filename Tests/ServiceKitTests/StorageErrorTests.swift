import Logging
import Postgres
import RPC
import Redis
import ServiceKit
import TestSupport
import Testing

/// How storage failures reach callers (`StorageErrors`): what waiting may cure is `unavailable`.
@Suite("Storage errors", .timeLimit(.minutes(2)))
struct StorageErrorTests {
    static let logger: Logger = {
        var logger = Logger(label: "test.storage-errors")
        logger.logLevel = .warning
        return logger
    }()

    @Test func postgresContentionLeftAfterTheRetriesIsUnavailableAndATakenValueAConflict() async throws {
        let url = try await TestServers.postgres().makeDatabase()
        let postgres = try PostgresClient(configuration: PostgresConfiguration(url: url), logger: Self.logger)
        for sqlState in ["40001", "40P01"] {
            let error = await #expect(throws: PostgresError.self) {
                try await postgres.execute("DO $$ BEGIN RAISE EXCEPTION 'contended' USING ERRCODE = '\(sqlState)'; END $$")
            }
            #expect(error?.rpcError.reason == "unavailable", "SQLSTATE \(sqlState)")
        }
        try await postgres.execute("CREATE TABLE names (name text PRIMARY KEY)")
        try await postgres.execute("INSERT INTO names VALUES ('a')")
        let taken = await #expect(throws: PostgresError.self) { try await postgres.execute("INSERT INTO names VALUES ('a')") }
        #expect(taken?.rpcError.reason == "conflict")
        let other = await #expect(throws: PostgresError.self) { try await postgres.execute("SELECT 1/0") }
        #expect(other?.rpcError.code == -32603)
        await postgres.shutdown()
    }

    @Test func redisRefusingForNowIsUnavailableAndOtherRefusalsInternal() async throws {
        let redis = RedisClient(configuration: try RedisConfiguration(url: try await TestServers.redis().url), logger: Self.logger)
        for reply in ["LOADING Redis is loading the dataset in memory", "BUSY Redis is busy running a script", "READONLY You cannot write against a read only replica"] {
            let error = await #expect(throws: RedisError.self) {
                _ = try await redis.send(["EVAL", RedisArgument("return redis.error_reply('\(reply)')"), "0"])
            }
            #expect(error?.isTransient == true, "\(reply)")
            #expect(error?.rpcError.reason == "unavailable", "\(reply)")
            #expect(RedisError.refusal(reply).rpcError.reason == "unavailable", "\(reply) within a pipeline")
        }
        let wrongType = await #expect(throws: RedisError.self) {
            _ = try await redis.send(["EVAL", "return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')", "0"])
        }
        #expect(wrongType?.isTransient == false)
        #expect(wrongType?.rpcError.code == -32603)
        await redis.shutdown()
    }
}
