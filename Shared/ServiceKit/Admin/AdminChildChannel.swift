import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import RPC

/// Hummingbird's HTTP/1 channel with what the admin server adds to each connection: the process's
/// ``ConnectionLimit`` (a connection over it is answered 503 and closed before a request is read)
/// and an ``AdminConnectionHandler``.
struct AdminChildChannel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let base: HTTP1Channel
    let connectionLimit: ConnectionLimit?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        if let connectionLimit, !connectionLimit.admit(channel) {
            // First in the pipeline: the refusal reads nothing, so the HTTP handlers never see a request.
            do {
                try channel.pipeline.syncOperations.addHandler(
                    RefusingHandler(sending: Self.refusal(connectionLimit.refusal)))
            } catch {
                return channel.eventLoop.makeFailedFuture(error)
            }
        }
        return base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(AdminConnectionHandler(), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }

    /// A 503 response that closes the connection, with `reason` as its text.
    private static func refusal(_ reason: String) -> [UInt8] {
        let body = reason + "\n"
        return Array(
            ("HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
                + "content-length: \(body.utf8.count)\r\nconnection: close\r\n\r\n" + body).utf8)
    }
}

/// The HTTP/1 connection management that Hummingbird's HTTP types cannot do, as they carry no
/// protocol version and the server answers every request as HTTP/1.1: after an HTTP/1.0 request
/// without `Connection: keep-alive`, or one with `Connection: close`, the response says
/// `Connection: close` and the connection closes after it; an HTTP/1.0 keep-alive response says
/// `Connection: keep-alive`. Once the server quiesces, responses say `Connection: close` (Hummingbird
/// closes the connection after the current one), and a connection still busy ``quiesceGrace``
/// later is closed. It sits between NIO's HTTP/1 decoder and Hummingbird's conversion to HTTP types.
final class AdminConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// How long a connection still busy at shutdown may take before it is closed: admin requests
    /// are probes, scrapes and media downloads, and a client slow to take its response must not
    /// hold up the shutdown of the process, whose RPC server stops after this one.
    static let quiesceGrace: TimeAmount = .seconds(2)

    /// For each request read and not yet answered, oldest first: the `Connection` its response
    /// carries (none for HTTP/1.1 keep-alive).
    private var connectionValues = CircularBuffer<String?>()
    private var isQuiescing = false
    private var closesAfterResponse = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = self.unwrapInboundIn(data) {
            let value: String? =
                if !head.isKeepAlive { "close" } else if head.version == .http1_0 { "keep-alive" } else { nil }
            self.connectionValues.append(value)
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            self.isQuiescing = true
            let channel = context.channel
            context.eventLoop.scheduleTask(in: Self.quiesceGrace) { channel.close(promise: nil) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Hummingbird's own 400 for a request it could not parse answers no request read here.
        guard let value = self.connectionValues.first else { return context.write(data, promise: promise) }
        switch self.unwrapOutboundIn(data) {
        case .head(var head):
            let value = self.isQuiescing ? "close" : value
            if let value { head.headers.replaceOrAdd(name: "connection", value: value) }
            self.closesAfterResponse = value == "close"
            context.write(self.wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            self.connectionValues.removeFirst()
            context.write(data, promise: promise)
            if self.closesAfterResponse {
                context.flush()
                context.close(promise: nil)
            }
        }
    }
}
