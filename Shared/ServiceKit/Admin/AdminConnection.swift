import Logging
import NIOCore
import NIOHTTP1

/// Serves the requests of one keep-alive connection, in order (NIO's pipelining handler holds
/// back a pipelined request until the previous response has ended).
struct AdminConnection {
    /// A connection with no traffic for this long is closed, so forgotten clients do not pile up.
    static let idleTimeout = TimeAmount.seconds(60)

    let channel: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>
    let responder: AdminResponder
    let connections: AdminConnections
    let logger: Logger

    func serve() async {
        guard self.connections.register(self.channel.channel) else {
            // Accepted while the server was shutting down.
            self.channel.channel.close(promise: nil)
            return
        }
        defer { self.connections.remove(self.channel.channel) }
        do {
            try await self.channel.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                for try await part in inbound {
                    switch part {
                    case .head(let requestHead):
                        head = requestHead
                    case .body:
                        continue
                    case .end:
                        guard let requestHead = head else { continue }
                        head = nil
                        let keepAlive = requestHead.isKeepAlive && !self.connections.isQuiescing
                        try await self.respond(to: requestHead, keepAlive: keepAlive, outbound: outbound)
                        if !keepAlive { return }
                    }
                }
            }
        } catch {
            // Parse errors were already answered with 400 by NIO; resets are the client's business.
            self.logger.debug("admin connection ended with an error", metadata: ["error": "\(error)"])
        }
    }

    private func respond(
        to head: HTTPRequestHead, keepAlive: Bool, outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        let request = AdminRequest(method: head.method, uri: head.uri, headers: head.headers)
        let response = await self.responder.respond(to: request)

        var headers = response.headers
        if response.bodyStream == nil && !headers.contains(name: "content-length") {
            headers.replaceOrAdd(name: "content-length", value: String(response.body.readableBytes))
        }
        if !keepAlive {
            headers.replaceOrAdd(name: "connection", value: "close")
        } else if head.version.major == 1 && head.version.minor == 0 {
            headers.replaceOrAdd(name: "connection", value: "keep-alive")
        }
        let responseHead = HTTPResponseHead(version: head.version, status: response.status, headers: headers)
        if head.method == .HEAD || (response.bodyStream == nil && response.body.readableBytes == 0) {
            try await outbound.write(contentsOf: [.head(responseHead), .end(nil)])
        } else if let stream = response.bodyStream {
            try await outbound.write(.head(responseHead))
            try await stream { piece in try await outbound.write(.body(.byteBuffer(piece))) }
            try await outbound.write(.end(nil))
        } else {
            try await outbound.write(contentsOf: [.head(responseHead), .body(.byteBuffer(response.body)), .end(nil)])
        }
    }
}

/// Closes a connection when `IdleStateHandler` reports it idle.
final class CloseOnIdleHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
