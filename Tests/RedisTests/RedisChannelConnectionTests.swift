import NIOCore
import TestSupport
import Testing

@testable import Redis

@Suite struct RedisChannelConnectionTests {
    /// Once a connection has closed, NIO has taken its handlers out of the pipeline, and a request
    /// written then reaches no handler: it must still fail, as a request that never arrived.
    @Test func aRequestOnAClosedConnectionFailsInsteadOfWaiting() async throws {
        let redis = try await TestServers.redis()
        let connection = try await RedisChannelConnection.connect(try configuration(redis))
        #expect(try await connection.send([["PING"]]) == [.simpleString("PONG")])
        connection.close()
        try await connection.closed.get()

        let result = await outcome(within: .seconds(5)) { try await connection.send([["PING"]]) }
        let error = try #require(result, "the request never completed").failure
        let failure = try #require(error as? RedisConnectionFailure)
        #expect(failure.error.code == .connectionFailed && !failure.requestMayHaveArrived)
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
