import NIOCore
import NIOPosix

/// A test client that writes raw HTTP/1.1 bytes and parses responses by hand, so the tests see
/// exactly what the admin server puts on the wire.
final class RawHTTPConnection {
    struct Response {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: String

        func header(_ name: String) -> String? {
            self.headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    struct ProtocolError: Error, CustomStringConvertible {
        var description: String
    }

    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private var buffer = ByteBuffer()

    private init(
        iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    ) {
        self.iterator = iterator
        self.outbound = outbound
    }

    /// Connects to 127.0.0.1:`port`, runs `body`, then closes.
    static func with<T>(port: Int, _ body: (RawHTTPConnection) async throws -> T) async throws -> T {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await body(RawHTTPConnection(iterator: inbound.makeAsyncIterator(), outbound: outbound))
        }
    }

    func send(_ text: String) async throws {
        try await self.outbound.write(ByteBuffer(string: text))
    }

    /// Reads one response; `bodyless` for responses to HEAD, whose Content-Length describes a body
    /// that is not sent.
    func readResponse(bodyless: Bool = false) async throws -> Response {
        var headEnd: Int?
        while true {
            let view = self.buffer.readableBytesView
            if let index = view.indices.first(where: { index in
                index + 3 < view.endIndex && view[index] == 13 && view[index + 1] == 10
                    && view[index + 2] == 13 && view[index + 3] == 10
            }) {
                headEnd = index - view.startIndex
                break
            }
            guard try await self.fill() else {
                throw ProtocolError(description: "connection closed before a response head")
            }
        }
        let headText = self.buffer.readString(length: headEnd!)!
        self.buffer.moveReaderIndex(forwardBy: 4)
        var lines = headText.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw ProtocolError(description: "bad status line in \(headText)")
        }
        let headers = lines.map { line -> (name: String, value: String) in
            let colon = line.firstIndex(of: ":")!
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingPrefix(" ").description)
        }
        var response = Response(status: status, headers: headers, body: "")
        let length = bodyless ? 0 : Int(response.header("content-length") ?? "0")!
        while self.buffer.readableBytes < length {
            guard try await self.fill() else { throw ProtocolError(description: "connection closed inside a body") }
        }
        response.body = self.buffer.readString(length: length)!
        return response
    }

    /// True when the server closes the connection without sending anything more.
    func isClosedByServer() async throws -> Bool {
        guard self.buffer.readableBytes == 0 else { return false }
        do {
            return try await !self.fill()
        } catch let error as ChannelError where error == .inputClosed || error == .eof {
            return true
        } catch let error as IOError where error.errnoCode == 104 {  // ECONNRESET
            return true
        }
    }

    private func fill() async throws -> Bool {
        guard var more = try await self.iterator.next() else { return false }
        self.buffer.writeBuffer(&more)
        return true
    }
}
