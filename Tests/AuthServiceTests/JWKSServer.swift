import Foundation
import Locking
import NIOCore
import NIOPosix
import Synchronization

/// Serves one JWKS document over plain HTTP on 127.0.0.1, like Google's certs URL, for the
/// `AVIARY_GOOGLE_JWKS_URL` path. While `stalled`, it reads requests and never answers, to
/// exercise the fetch timeout.
final class JWKSServer: Sendable {
    let port: Int
    let requests = Atomic<Int>(0)
    private let stalledFlag = Atomic<Bool>(false)
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    /// Requests received so far.
    var requestCount: Int { requests.load(ordering: .relaxed) }

    var stalled: Bool {
        get { stalledFlag.load(ordering: .relaxed) }
        set { stalledFlag.store(newValue, ordering: .relaxed) }
    }

    static func start(serving file: String) async throws -> JWKSServer {
        let body = try Data(contentsOf: URL(fileURLWithPath: file))
        let box = ServerBox()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ResponseHandler(body: body, box: box))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = JWKSServer(port: channel.localAddress!.port!, channel: channel)
        box.server.withLock { $0 = server }
        return server
    }

    deinit { channel.close(promise: nil) }
}

/// Lets connection handlers reach the server's switches.
private final class ServerBox: Sendable {
    let server = Locked<JWKSServer?>(nil)
}

/// Answers the first request on a connection with the document, unless the server is stalled.
private final class ResponseHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let body: Data
    private let box: ServerBox

    init(body: Data, box: ServerBox) {
        self.body = body
        self.box = box
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let server = box.server.withLock({ $0 }) else { return }
        server.requests.add(1, ordering: .relaxed)
        guard !server.stalled else { return }
        var response = context.channel.allocator.buffer(capacity: body.count + 128)
        response.writeString(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n")
        response.writeBytes(body)
        let connection = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(response)).whenComplete { _ in connection.value.close(promise: nil) }
    }
}
