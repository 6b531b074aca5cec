import AviaryAPI
import AviaryJSON
import Foundation
import HTTPTypes
import NIOHTTP1
import NIOWebSocket
import RPC
import ServiceKit
import Synchronization

/// Mastodon's streaming API on a WebSocket, `GET /api/v1/streaming`: the streams `user` (new
/// statuses of the home timeline and notifications), `user:notification`, `hashtag` (`tag`), the
/// public ones and `list` (`list`, one of the user's),
/// asked for in the query (`stream=`) or with `{"type": "subscribe", "stream": …}` messages
/// (``MastodonFeeds``). The token comes as `access_token`, `Authorization: Bearer` or the
/// subprotocol. Each event is `{"stream": [...], "event": "update" | "notification", "payload":
/// "<the entity as JSON>"}`.
final class MastodonStream: SocketMessages {
    typealias Stream = MastodonFeeds.Stream

    /// What an admitted upgrade asked for.
    struct Request: Sendable {
        var token: String
        var grant: MastodonGrant
        var origin: String
        var address: String?
        var streams: [Stream]
        /// The subprotocol the token came as, echoed in the handshake's answer.
        var subprotocol: String?
    }

    /// The socket's side of the events: one JSON message each.
    private struct Messages: MastodonEventSink {
        let link: SocketLink

        func send(_ event: String, stream: Stream, payload: String) {
            let message: JSONValue = ["stream": stream.names, "event": .string(event), "payload": .string(payload)]
            link.send(Data(MastodonFeeds.text(message).utf8))
        }

        func close(_ reason: MastodonFeeds.Ending) {
            switch reason {
            case .sessionEnded: link.close(.policyViolation, reason: MastodonError.invalidToken.message)
            case .serviceRestarted(let service): link.close(.unknown(1012), reason: "the \(service) service restarted: reconnect")
            }
        }
    }

    let link: SocketLink
    let binaryRefusal = Data(#"{"error":"Send text messages"}"#.utf8)
    private let gateway: GatewayService
    private let request: Request
    private let feeds: MastodonFeeds
    private let claimed = Atomic<Bool>(false)

    init(gateway: GatewayService, request: Request, link: SocketLink) {
        self.gateway = gateway
        self.request = request
        self.link = link
        feeds = MastodonFeeds(
            gateway: gateway, token: request.token, grant: request.grant, address: request.address,
            renderer: MastodonRenderer(origin: request.origin), sink: Messages(link: link))
    }

    // MARK: Admission

    /// Whether the upgrade may go ahead: a valid token of a user, with `read:statuses`, and a
    /// stream that exists.
    static func admit(_ head: HTTPRequestHead, caller: EdgeCaller, gateway: GatewayService) async -> Result<SocketAdmission, SocketRefusal> {
        let query = MastodonParams(form: head.uri.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? "")
        let subprotocol = head.headers.first(name: "Sec-WebSocket-Protocol")
        guard let token = query["access_token"] ?? caller.token ?? subprotocol,
            let grant = try? await gateway.mastodonTokens.grant(for: token)
        else { return .failure(SocketRefusal(status: .unauthorized, message: MastodonError.invalidToken.message)) }
        guard grant.userID != nil else {
            return .failure(SocketRefusal(status: .unprocessableContent, message: MastodonError.userRequired.message))
        }
        guard grant.scopes.allows("read:statuses") else {
            return .failure(SocketRefusal(status: .forbidden, message: MastodonError.outsideScopes.message))
        }
        var streams: [Stream] = []
        if let name = query["stream"] {
            guard let stream = Stream(name: name, tag: query["tag"], list: query["list"]) else {
                return .failure(SocketRefusal(status: .badRequest, message: "Unknown stream type"))
            }
            guard await MastodonFeeds.accepts(stream, gateway: gateway, caller: EdgeCaller(token: grant.accessToken, address: caller.address))
            else { return .failure(SocketRefusal(status: .notFound, message: "Invalid list")) }
            streams = [stream]
        }
        let request = Request(
            token: token, grant: grant, origin: gateway.publicOrigin(host: head.headers.first(name: "Host")), address: caller.address,
            streams: streams, subprotocol: token == subprotocol ? subprotocol : nil)
        return .success(SocketAdmission(caller: caller, principal: nil, mastodon: request))
    }

    // MARK: The socket's life

    func open() -> String? {
        guard let user = request.grant.userID else { return MastodonError.userRequired.message }
        guard gateway.socketsPerUser.claim(user) else { return GatewayService.tooManySockets(ofUser: gateway.socketsPerUser.limit) }
        claimed.store(true, ordering: .relaxed)
        for stream in request.streams { feeds.follow(stream) }
        return nil
    }

    /// `{"type": "subscribe" | "unsubscribe", "stream": "...", "tag": "..."}`; an error for
    /// anything else.
    func answer(_ frame: Data) async -> Data? {
        guard let message = try? JSONDecoder().decode(JSONValue.self, from: frame), let type = message["type"]?.stringValue,
            let name = message["stream"]?.stringValue
        else { return Self.error("Send {\"type\": \"subscribe\", \"stream\": \"user\"} or unsubscribe") }
        guard let stream = Stream(name: name, tag: message["tag"]?.stringValue, list: message["list"]?.stringValue) else {
            return Self.error("Unknown stream type")
        }
        switch type {
        case "subscribe":
            guard await feeds.accepts(stream) else { return Self.error("Invalid list") }
            feeds.follow(stream)
        case "unsubscribe": feeds.unfollow(stream)
        default: return Self.error("Unknown message type")
        }
        return nil
    }

    func end() async {
        await feeds.end()
        if claimed.load(ordering: .relaxed), let user = request.grant.userID { gateway.socketsPerUser.release(user) }
    }

    private static func error(_ message: String) -> Data {
        Data(MastodonFeeds.text(["error": .string(message)]).utf8)
    }
}
