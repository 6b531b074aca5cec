import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import RPC

/// A connection to the public port: HTTP/1.1 answered by the router, or `GET /rpc` upgraded to a
/// WebSocket.
///
/// An upgraded socket is served by a channel handler (``SocketHandler``) on the connection's event
/// loop, with no task of its own while it is idle: the connection's task ends with the upgrade. A
/// task per connection, as Hummingbird's HTTP loop and hummingbird-websocket's handler run, keeps
/// the memory of its deepest call for as long as the socket lives (about 19 KiB a socket), and
/// an app's socket lives for hours, mostly idle.
struct EdgeChannel: ServerChildChannel, HTTPChannelHandler {
    /// What a connection turned out to be once its first request was read.
    enum Opened: Sendable {
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// A WebSocket upgrade the gateway refused: the answer says why.
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, SocketRefusal)
        /// Served by the ``SocketHandler`` in the channel's pipeline from now on.
        case webSocket
    }

    struct Value: ServerChildChannelValue {
        let opened: EventLoopFuture<Opened>
        let channel: any Channel
    }

    let responder: Responder
    let gateway: GatewayService
    let http1: HTTP1Channel.Configuration

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let gateway = gateway
            // The upgrade's verdict, from `shouldUpgrade` to the pipeline it sets up.
            let verdict = NIOLoopBoundBox<Result<SocketAdmission, SocketRefusal>?>(nil, eventLoop: channel.eventLoop)
            let upgrader = NIOTypedWebSocketServerUpgrader<Opened>(
                maxFrameSize: gateway.settings.maxMessageBytes,
                shouldUpgrade: { channel, head in
                    let caller = gateway.caller(of: head, peer: channel.remoteAddress?.ipAddress)
                    return channel.eventLoop.makeFutureWithTask {
                        await gateway.admitSocket(head: head, caller: caller)
                    }.map { admission -> HTTPHeaders? in
                        verdict.value = admission
                        guard case .success(let admitted) = admission else { return nil }
                        // A token sent as the subprotocol (Mastodon's browsers) is echoed, as the handshake asks.
                        return admitted.mastodon?.subprotocol.map { ["Sec-WebSocket-Protocol": $0] } ?? [:]
                    }
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        guard case .success(let admission) = verdict.value else { throw ChannelError.inappropriateOperationForState }
                        try channel.pipeline.syncOperations.addHandler(SocketHandler(gateway: gateway, admission: admission))
                        return .webSocket
                    }
                })
            let upgrade = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: http1.idleTimeout.map { .init($0) }, logger: logger))
                        let http = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        if case .failure(let refusal) = verdict.value { return .refused(http, refusal) }
                        return .http(http)
                    }
                })
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<Opened>(upgradeConfiguration: upgrade)
            configuration.enablePipelining = false
            configuration.enableErrorHandling = false
            configuration.enableResponseHeaderValidation = false
            configuration.decoderConfiguration.maxHeaderFieldSize = http1.httpDecoder.maxHeaderFieldSize
            configuration.decoderConfiguration.maxHeaderListSize = http1.httpDecoder.maxHeaderListSize
            configuration.decoderConfiguration.maxHeaderFieldCount = http1.httpDecoder.maxHeaderFieldCount
            let opened = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            let upgradeHandler = try channel.pipeline.syncOperations.handler(type: NIOTypedHTTPServerUpgradeHandler<Opened>.self)
            try channel.pipeline.syncOperations.addHandler(UpgradeCheck(), position: .before(upgradeHandler))
            return Value(opened: opened, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.opened.get() {
            case .http(let http):
                await handleHTTP(asyncChannel: http, logger: logger)
            case .refused(let http, let refusal):
                try await http.executeThenClose { _, outbound in
                    try await outbound.write(contentsOf: refusal.responseParts())
                }
            case .webSocket:
                return
            }
        } catch {
            logger.debug("connection ended before its first request was answered", metadata: ["error": "\(error)"])
        }
    }
}

/// A WebSocket upgrade let through: its caller, and the user its token verified as (none yet
/// without a token: `gateway.authenticate` gives one on the socket); for Mastodon's streaming,
/// what it asked for.
struct SocketAdmission: Sendable {
    let caller: EdgeCaller
    let principal: RPCPrincipal?
    var mastodon: MastodonStream.Request? = nil

    /// The session that answers the socket's messages.
    func session(gateway: GatewayService, link: SocketLink) -> any SocketMessages {
        if let mastodon { return MastodonStream(gateway: gateway, request: mastodon, link: link) }
        return SocketSession(gateway: gateway, admission: self, link: link)
    }
}

/// Why a WebSocket upgrade was refused, answered as the gateway's other HTTP errors are: the status,
/// a JSON body naming the limit, `Retry-After` when waiting helps, and the connection closed.
struct SocketRefusal: Error {
    let status: HTTPResponse.Status
    let message: String
    var retryAfterSeconds: Int?

    func responseParts() -> [HTTPResponsePart] {
        let body = EdgeResponses.failureBody(status, message)
        var fields: HTTPFields = [.contentType: "application/json", .connection: "close", .contentLength: String(body.count)]
        if let retryAfterSeconds { fields[.retryAfter] = String(retryAfterSeconds) }
        return [.head(HTTPResponse(status: status, headerFields: fields)), .body(ByteBuffer(bytes: body)), .end(nil)]
    }
}
