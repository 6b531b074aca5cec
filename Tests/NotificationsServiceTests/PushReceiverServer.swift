import Foundation
import Locking
import NIOCore
import NIOHTTP1
import NIOPosix

/// A push service on 127.0.0.1 for the Web Push tests: keeps each POST (path, headers, body) and
/// answers with the status its path is given (201 unless told otherwise).
final class PushReceiverServer: Sendable {
    struct Push: Sendable {
        var path: String
        var headers: [String: String]
        var body: [UInt8]
    }

    let port: Int
    private let channel: any Channel
    private let state: State

    final class State: Sendable {
        let pushes = Locked<[Push]>([])
        let statuses = Locked<[String: Int]>([:])
    }

    private init(port: Int, channel: any Channel, state: State) {
        self.port = port
        self.channel = channel
        self.state = state
    }

    static func start() async throws -> PushReceiverServer {
        let state = State()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMapThrowing {
                    try channel.pipeline.syncOperations.addHandler(Handler(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return PushReceiverServer(port: channel.localAddress!.port!, channel: channel, state: state)
    }

    deinit { channel.close(promise: nil) }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Answers POSTs to `path` with `status` from now on.
    func answer(_ path: String, with status: Int) {
        state.statuses.withLock { $0[path] = status }
    }

    func pushes(to path: String) -> [Push] {
        state.pushes.withLock { $0.filter { $0.path == path } }
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let state: State
        private var head: HTTPRequestHead?
        private var body: [UInt8] = []

        init(state: State) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body = []
            case .body(var buffer):
                body += buffer.readBytes(length: buffer.readableBytes) ?? []
            case .end:
                guard let head else { return }
                let headers = Dictionary(head.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
                state.pushes.withLock { $0.append(Push(path: head.uri, headers: headers, body: body)) }
                let status = state.statuses.withLock { $0[head.uri] } ?? 201
                var response = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status))
                response.headers.add(name: "Content-Length", value: "0")
                context.write(wrapOutboundOut(.head(response)), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
