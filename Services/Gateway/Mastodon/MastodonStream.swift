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
/// statuses of the home timeline and notifications), `user:notification` and `hashtag` (`tag`),
/// asked for in the query (`stream=`) or with `{"type": "subscribe", "stream": …}` messages. The
/// token comes as `access_token`, `Authorization: Bearer` or the subprotocol. Each event is
/// `{"stream": [...], "event": "update" | "notification", "payload": "<the entity as JSON>"}`.
///
/// Notifications are the notifications service's live subscription. The services push no new
/// statuses, so the home timeline and a tag's are read every ``pollInterval`` and what is newer
/// than the last read is sent, oldest first.
final class MastodonStream: SocketMessages {
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

    /// One stream a socket follows.
    enum Stream: Hashable, Sendable {
        case user
        case notifications
        case hashtag(String)

        init?(name: String, tag: String?) {
            switch name {
            case "user": self = .user
            case "user:notification": self = .notifications
            case "hashtag":
                guard let tag, (1...100).contains(tag.count), tag.unicodeScalars.allSatisfy(TextRules.isNameScalar) else { return nil }
                self = .hashtag(tag.lowercased())
            default: return nil
            }
        }

        /// As its events name it.
        var names: JSONValue {
            switch self {
            case .user: ["user"]
            case .notifications: ["user:notification"]
            case .hashtag(let tag): ["hashtag", .string(tag)]
            }
        }
    }

    static let pollInterval = Duration.seconds(2)

    let link: SocketLink
    let binaryRefusal = Data(#"{"error":"Send text messages"}"#.utf8)
    private let gateway: GatewayService
    private let request: Request
    private let renderer: MastodonRenderer
    private let live: LiveLinks
    /// The streams followed now; the notifications subscription's events are sent while one
    /// that carries them is.
    private let following: Following
    private let polls = Mutex<[Stream: Task<Void, Never>]>([:])
    private let subscribed = Atomic<Bool>(false)
    private let claimed = Atomic<Bool>(false)

    /// Shared with the notifications subscription's delivery, which must not hold the stream.
    private final class Following: Sendable {
        let streams = Mutex<Set<Stream>>([])
    }

    init(gateway: GatewayService, request: Request, link: SocketLink) {
        self.gateway = gateway
        self.request = request
        self.link = link
        let renderer = MastodonRenderer(origin: request.origin)
        self.renderer = renderer
        let following = Following()
        self.following = following
        live = LiveLinks(
            channels: gateway.liveChannels,
            deliver: { frame in
                let streams = following.streams.withLock { $0 }
                guard let stream = [Stream.user, .notifications].first(where: streams.contains),
                    let event = Self.notificationEvent(frame, renderer: renderer, stream: stream)
                else { return }
                link.send(event)
            },
            lost: { service in link.close(.unknown(1012), reason: "the \(service) service restarted: reconnect") })
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
            guard let stream = Stream(name: name, tag: query["tag"]) else {
                return .failure(SocketRefusal(status: .badRequest, message: "Unknown stream type"))
            }
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
        for stream in request.streams { follow(stream) }
        return nil
    }

    /// `{"type": "subscribe" | "unsubscribe", "stream": "...", "tag": "..."}`; an error for
    /// anything else.
    func answer(_ frame: Data) async -> Data? {
        guard let message = try? JSONDecoder().decode(JSONValue.self, from: frame), let type = message["type"]?.stringValue,
            let name = message["stream"]?.stringValue
        else { return Self.error("Send {\"type\": \"subscribe\", \"stream\": \"user\"} or unsubscribe") }
        guard let stream = Stream(name: name, tag: message["tag"]?.stringValue) else { return Self.error("Unknown stream type") }
        switch type {
        case "subscribe": follow(stream)
        case "unsubscribe": unfollow(stream)
        default: return Self.error("Unknown message type")
        }
        return nil
    }

    func end() async {
        let tasks = polls.withLock { polls in
            defer { polls = [:] }
            return Array(polls.values)
        }
        for task in tasks { task.cancel() }
        let meta = RequestMeta(token: request.grant.accessToken, service: gateway.resources.serviceCredential, clientAddress: request.address)
        await live.close(meta: meta)
        if claimed.load(ordering: .relaxed), let user = request.grant.userID { gateway.socketsPerUser.release(user) }
    }

    // MARK: Streams

    private func follow(_ stream: Stream) {
        guard following.streams.withLock({ $0.insert(stream).inserted }) else { return }
        if stream != .notifications {
            let task = poll(stream)
            polls.withLock { $0[stream] = task }
        }
        // Notifications come with the user's streams, from one subscription however many ask.
        if case .hashtag = stream { return }
        guard request.grant.scopes.allows("read:notifications"), !subscribed.exchange(true, ordering: .relaxed) else { return }
        let (forwarder, caller, live) = (gateway.forwarder, EdgeCaller(token: request.grant.accessToken, address: request.address), live)
        Task {
            guard let params = try? RawJSON(encoding: NotificationSubscribeParams()) else { return }
            _ = await forwarder.call(.notifications, NotificationsAPI.subscribe.name, params: params, for: caller, live: live)
        }
    }

    private func unfollow(_ stream: Stream) {
        following.streams.withLock { _ = $0.remove(stream) }
        polls.withLock { $0.removeValue(forKey: stream) }?.cancel()
    }

    /// Reads `stream`'s newest statuses every ``pollInterval`` and sends those newer than the
    /// newest of the first read, oldest first.
    private func poll(_ stream: Stream) -> Task<Void, Never> {
        let (gateway, token, address, renderer, link) = (gateway, request.token, request.address, renderer, link)
        return Task {
            var newest: Int64?
            while !Task.isCancelled {
                do {
                    // The grant's access token, renewed when it is about to expire.
                    let caller = EdgeCaller(token: try await gateway.mastodonTokens.grant(for: token).accessToken, address: address)
                    let page: Page<Tweet> =
                        switch stream {
                        case .hashtag(let tag): try await gateway.forwarder.call(TweetsAPI.search, SearchParams(query: "#" + tag), for: caller)
                        default: try await gateway.forwarder.call(TimelineAPI.home, PageParams(), for: caller)
                        }
                    if let seen = newest {
                        for tweet in page.items.reversed() where tweet.id.value > seen {
                            link.send(Self.event("update", stream: stream, payload: renderer.status(tweet)))
                        }
                    }
                    newest = max(newest ?? 0, page.items.first?.id.value ?? 0)
                } catch is MastodonError {
                    return link.close(.policyViolation, reason: MastodonError.invalidToken.message)
                } catch {
                    // A service that could not answer now is asked again at the next tick.
                }
                try? await Task.sleep(for: Self.pollInterval)
            }
        }
    }

    // MARK: Events

    static func event(_ name: String, stream: Stream, payload: JSONValue) -> Data {
        let text = (try? WireEncoding.encode(payload)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        let event: JSONValue = ["stream": stream.names, "event": .string(name), "payload": .string(text)]
        return (try? WireEncoding.encode(event)).map { Data($0) } ?? Data()
    }

    /// A pushed `notifications.event` as Mastodon's `notification` event; nil for the others
    /// (withdrawals, resyncs) and for message notifications, which stay with messaging.
    static func notificationEvent(_ frame: Data, renderer: MastodonRenderer, stream: Stream) -> Data? {
        guard let pushed = try? JSONDecoder().decode(JSONValue.self, from: frame), let event = pushed["params"]?["event"],
            event["type"] == "notification", let notification = event["notification"],
            let item = try? RawJSON(encoding: notification).decode(NotificationItem.self), item.type != .message,
            let entity = try? renderer.notification(item)
        else { return nil }
        return Self.event("notification", stream: stream, payload: entity)
    }

    private static func error(_ message: String) -> Data {
        (try? WireEncoding.encode(JSONValue.object(["error": .string(message)]))).map { Data($0) } ?? Data()
    }
}
