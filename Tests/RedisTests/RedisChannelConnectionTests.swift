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

    /// Lengths of one and several digits, an empty argument and bytes that are not UTF-8, in RESP.
    @Test func commandsAreWrittenAsRESP() {
        let long = RedisArgument([UInt8](repeating: 0x78, count: 1234))
        let buffer = RedisChannelHandler.encode(
            [["GET", "k"], ["SET", RedisArgument([0, 0xFF, 0x0D, 0x0A]), ""], Array(repeating: long, count: 10)],
            allocator: ByteBufferAllocator())
        let expected =
            Array("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nSET\r\n$4\r\n".utf8) + [0, 0xFF, 0x0D, 0x0A]
            + Array("\r\n$0\r\n\r\n*10\r\n".utf8)
            + Array(repeating: Array("$1234\r\n".utf8) + long.bytes + Array("\r\n".utf8), count: 10).joined()
        #expect(Array(buffer.readableBytesView) == expected)
        #expect(buffer.readableBytes == expected.count)
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
