import Foundation
import NIOCore
import NIOHTTP1

/// Lets through to NIO's upgrader only the upgrades it can complete: `Upgrade: websocket` with a
/// `Sec-WebSocket-Key` of 16 base64 bytes and `Sec-WebSocket-Version: 13`. NIO closes a connection
/// whose upgrade it cannot complete without a word; instead, such a request (or an upgrade to
/// anything but a WebSocket) loses its `Upgrade` and goes on as a plain request: `GET /rpc` is then
/// answered 400 naming the bad header (``invalidHeader``), or 426 for another protocol.
/// Checks a connection's first request only, as upgrades are taken only there.
final class UpgradeCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    /// The header a request whose WebSocket upgrade was malformed carries, with the reason; one a
    /// client sent is removed first.
    static let invalidHeader = "X-Aviary-Invalid-Upgrade"

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        head.headers.remove(name: Self.invalidHeader)
        let protocols = head.headers[canonicalForm: "upgrade"].map { $0.lowercased() }
        if !protocols.isEmpty {
            let problem = protocols.contains("websocket") ? Self.problem(with: head.headers) : nil
            if !protocols.contains("websocket") || problem != nil {
                head.headers.remove(name: "upgrade")
                let connection = head.headers[canonicalForm: "connection"].filter { $0.lowercased() != "upgrade" }
                head.headers.replaceOrAdd(name: "connection", value: connection.joined(separator: ", "))
                if let problem { head.headers.add(name: Self.invalidHeader, value: problem) }
            }
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
        // Upgrades are taken only as a connection's first request.
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// What is wrong with a WebSocket upgrade's headers; nil when NIO can complete it.
    private static func problem(with headers: HTTPHeaders) -> String? {
        guard headers[canonicalForm: "sec-websocket-version"] == ["13"] else {
            return "a WebSocket upgrade needs Sec-WebSocket-Version: 13"
        }
        let keys = headers[canonicalForm: "sec-websocket-key"]
        guard keys.count == 1, Data(base64Encoded: String(keys[0]))?.count == 16 else {
            return "a WebSocket upgrade needs Sec-WebSocket-Key: the base64 of 16 random bytes"
        }
        return nil
    }
}
