import Foundation
import Locking
import NIOCore
import NIOHTTP1
import NIOPosix

/// A small HTTP/1.1 client for the gateway benchmark, `aviary soak` and `aviary docs`: keep-alive
/// connections, one request at a time on each, taken from an idle list (a new one when none is
/// idle). Only what they need: a POST or GET, the status and the body. A request unanswered after
/// ``BenchSocket/callTimeout`` fails with ``BenchTimeout`` and its connection is closed.
final class BenchHTTP: Sendable {
    struct Reply: Sendable {
        var status: Int
        var body: ByteBuffer
    }

    private let host: String
    private let port: Int
    private let idle = Locked<[any Channel]>([])

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    func request(_ method: HTTPMethod, _ path: String, body: ByteBuffer? = nil, headers: [(String, String)] = []) async throws -> Reply {
        let channel = try await take()
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: path)
        head.headers.add(name: "Host", value: "\(host):\(port)")
        head.headers.add(name: "Content-Length", value: String(body?.readableBytes ?? 0))
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        let promise = channel.eventLoop.makePromise(of: Reply.self)
        // The promise itself fails at the timeout, and when the write does: a channel that closed
        // just before the write never hands the exchange to its handler. (A second completion of a
        // promise does nothing.)
        let timeout = channel.eventLoop.scheduleTask(in: TimeAmount(BenchSocket.callTimeout)) {
            promise.fail(BenchTimeout())
            channel.close(promise: nil)
        }
        promise.futureResult.whenComplete { _ in timeout.cancel() }
        channel.writeAndFlush(BenchExchange(head: head, body: body, promise: promise)).whenFailure { promise.fail($0) }
        let reply = try await promise.futureResult.get()
        if channel.isActive { idle.withLock { $0.append(channel) } }
        return reply
    }

    func close() async {
        for channel in idle.withLock({ list in defer { list = [] }; return list }) { try? await channel.close() }
    }

    private func take() async throws -> any Channel {
        while let channel = idle.withLock({ $0.popLast() }) {
            if channel.isActive { return channel }
        }
        return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(BenchExchangeHandler())
                }
            }
            .connect(host: host, port: port).get()
    }
}

/// One request and where its reply goes.
struct BenchExchange {
    var head: HTTPRequestHead
    var body: ByteBuffer?
    var promise: EventLoopPromise<BenchHTTP.Reply>
}

/// Writes an exchange's request and completes its promise with the response.
private final class BenchExchangeHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = BenchExchange
    typealias OutboundOut = HTTPClientRequestPart

    private var waiting: EventLoopPromise<BenchHTTP.Reply>?
    private var status = 0
    private var body = ByteBuffer()

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let exchange = unwrapOutboundIn(data)
        waiting = exchange.promise
        context.write(wrapOutboundOut(.head(exchange.head)), promise: nil)
        if let body = exchange.body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            body.clear()
        case .body(var part):
            body.writeBuffer(&part)
        case .end:
            let promise = waiting
            waiting = nil
            promise?.succeed(BenchHTTP.Reply(status: status, body: body))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        waiting?.fail(ChannelError.ioOnClosedChannel)
        waiting = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        waiting?.fail(error)
        waiting = nil
        context.close(promise: nil)
    }
}
