import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import RPC
import ServiceKit
import Synchronization

/// Where a stream's events go: a WebSocket's messages (``MastodonStream``) or an HTTP response's
/// server-sent events (`GET /api/v1/streaming/user`).
protocol MastodonEventSink: Sendable {
    /// `payload` is the event's entity as JSON text.
    func send(_ event: String, stream: MastodonFeeds.Stream, payload: String)
    /// Ends the stream: its session ended, or a service that held its subscription restarted.
    func close(_ reason: MastodonFeeds.Ending)
}

/// What one streaming connection follows, and the events it is sent: notifications from the
/// notifications service's live subscription; new statuses of the home timeline or of a tag, read
/// every ``pollInterval`` (the services push none) and sent when newer than the last read, oldest
/// first, and the ids of statuses gone since the last read.
final class MastodonFeeds: Sendable {
    /// One stream a connection follows.
    enum Stream: Hashable, Sendable {
        case user
        case notifications
        case hashtag(String)
        /// The public timeline (`public`, `public:media`) or, the same on one instance, the local
        /// one (`public:local`, `public:local:media`).
        case everyone(local: Bool, mediaOnly: Bool)
        /// One of the user's lists (``accepts(_:)`` checks that it is theirs).
        case list(EntityID)
        /// The user's direct statuses: Aviary keeps none (direct messages stay in messaging, and a
        /// direct status is refused), so it is followed, as a client expects it to be, and sends
        /// nothing.
        case direct

        /// The stream `name` names, with its `tag` (hashtag) or `list` (list) parameter.
        init?(name: String, tag: String?, list: String? = nil) {
            switch name {
            case "list":
                guard let id = list.flatMap(MastodonParams.id) else { return nil }
                self = .list(EntityID(id))
            case "user": self = .user
            case "user:notification": self = .notifications
            case "direct": self = .direct
            case "hashtag":
                guard let tag, (1...100).contains(tag.count), tag.unicodeScalars.allSatisfy(TextRules.isNameScalar) else { return nil }
                self = .hashtag(tag.lowercased())
            case "public", "public:media", "public:local", "public:local:media":
                self = .everyone(local: name.hasPrefix("public:local"), mediaOnly: name.hasSuffix(":media"))
            default: return nil
            }
        }

        /// As its events name it.
        var names: JSONValue {
            switch self {
            case .user: ["user"]
            case .notifications: ["user:notification"]
            case .hashtag(let tag): ["hashtag", .string(tag)]
            case .everyone(let local, let mediaOnly): [.string("public" + (local ? ":local" : "") + (mediaOnly ? ":media" : ""))]
            case .list(let id): ["list", .string(id.description)]
            case .direct: ["direct"]
            }
        }

        /// Whether its statuses are read every ``pollInterval``: notifications come from their
        /// subscription, and the direct stream has none to read.
        var isPolled: Bool {
            switch self {
            case .user, .hashtag, .everyone, .list: true
            case .notifications, .direct: false
            }
        }

        /// Whether the user's notifications come with it (the user's own streams).
        var carriesNotifications: Bool {
            switch self {
            case .user, .notifications: true
            case .hashtag, .everyone, .list, .direct: false
            }
        }
    }

    enum Ending: Sendable {
        case sessionEnded
        case serviceRestarted(ServiceName)
    }

    static let pollInterval = Duration.seconds(2)

    private let gateway: GatewayService
    /// The Mastodon token, whose access token is renewed for each read.
    private let token: String
    private let grant: MastodonGrant
    private let address: String?
    private let renderer: MastodonRenderer
    private let sink: any MastodonEventSink
    private let live: LiveLinks
    /// The streams followed now; the notifications subscription's events are sent while one
    /// that carries them is.
    private let following: Following
    private let polls = Locked<[Stream: Task<Void, Never>]>([:])
    private let subscribed = Atomic<Bool>(false)

    /// Shared with the notifications subscription's delivery, which must not hold the feeds.
    private final class Following: Sendable {
        let streams = Locked<Set<Stream>>([])
    }

    init(gateway: GatewayService, token: String, grant: MastodonGrant, address: String?, renderer: MastodonRenderer, sink: any MastodonEventSink) {
        self.gateway = gateway
        self.token = token
        self.grant = grant
        self.address = address
        self.renderer = renderer
        self.sink = sink
        let following = Following()
        self.following = following
        live = LiveLinks(
            channels: gateway.liveChannels,
            deliver: { frame in
                let streams = following.streams.withLock { $0 }
                guard let stream = [Stream.user, .notifications].first(where: streams.contains),
                    let payload = Self.notification(frame, renderer: renderer)
                else { return }
                sink.send("notification", stream: stream, payload: payload)
            },
            lost: { service in sink.close(.serviceRestarted(service)) })
    }

    /// Whether the user may follow `stream`: a list must be theirs (`graph.list` finds it).
    func accepts(_ stream: Stream) async -> Bool {
        await Self.accepts(stream, gateway: gateway, caller: EdgeCaller(token: grant.accessToken, address: address))
    }

    /// Whether `caller` may follow `stream`, before a connection's feeds exist.
    static func accepts(_ stream: Stream, gateway: GatewayService, caller: EdgeCaller) async -> Bool {
        guard case .list(let id) = stream else { return true }
        return (try? await gateway.forwarder.call(GraphAPI.list, ListParams(listId: id), for: caller)) != nil
    }

    func follow(_ stream: Stream) {
        guard following.streams.withLock({ $0.insert(stream).inserted }) else { return }
        if stream.isPolled {
            let task = poll(stream)
            polls.withLock { $0[stream] = task }
        }
        // Notifications come with the user's streams, from one subscription however many ask.
        guard stream.carriesNotifications, grant.scopes.allows("read:notifications"), !subscribed.exchange(true, ordering: .relaxed) else { return }
        let (forwarder, caller, live) = (gateway.forwarder, EdgeCaller(token: grant.accessToken, address: address), live)
        Task {
            guard let params = try? RawJSON(encoding: NotificationSubscribeParams()) else { return }
            _ = await forwarder.call(.notifications, NotificationsAPI.subscribe.name, params: params, for: caller, live: live)
        }
    }

    func unfollow(_ stream: Stream) {
        following.streams.withLock { _ = $0.remove(stream) }
        polls.withLock { $0.removeValue(forKey: stream) }?.cancel()
    }

    /// Stops the reads and ends the notifications subscription.
    func end() async {
        let tasks = polls.withLock { polls in
            defer { polls = [:] }
            return Array(polls.values)
        }
        for task in tasks { task.cancel() }
        await live.close(meta: RequestMeta(token: grant.accessToken, service: gateway.resources.serviceCredential, clientAddress: address))
    }

    /// Reads `stream`'s newest statuses every ``pollInterval`` and sends those newer than the
    /// newest of the first read, oldest first (`update`), and the id of each status of the last
    /// read that is gone from the span the new read covers (`delete`: deleted, or no longer
    /// for this timeline, as after an unfollow). A read goes on to older pages until it meets the
    /// newest status sent, up to ``catchUpLimit`` statuses: a busy public timeline may bring more
    /// than a page between two reads.
    private func poll(_ stream: Stream) -> Task<Void, Never> {
        let (gateway, token, address, renderer, sink) = (gateway, token, address, renderer, sink)
        return Task {
            var newest: Int64?
            var shown: Set<Int64> = []
            while !Task.isCancelled {
                do {
                    // The grant's access token, renewed when it is about to expire.
                    let caller = EdgeCaller(token: try await gateway.mastodonTokens.grant(for: token).accessToken, address: address)
                    var items: [Tweet] = []
                    var cursor: String?
                    repeat {
                        let page = try await Self.read(stream, cursor: cursor, gateway: gateway, caller: caller)
                        items += page.items
                        cursor = page.nextCursor
                    } while cursor != nil && items.count < Self.catchUpLimit
                        && newest.map { (items.last?.entryId.value ?? .min) > $0 } == true
                    let ids = Set(items.map(\.entryId.value))
                    // A read with more to come covers down to its oldest; a whole one, everything.
                    let covered = cursor == nil ? Int64.min : (ids.min() ?? Int64.min)
                    for gone in shown.subtracting(ids).sorted() where gone >= covered {
                        sink.send("delete", stream: stream, payload: String(gone))
                    }
                    if let seen = newest {
                        for tweet in items.reversed() where tweet.entryId.value > seen {
                            sink.send("update", stream: stream, payload: Self.text(renderer.status(tweet)))
                        }
                    }
                    newest = max(newest ?? 0, items.first?.entryId.value ?? 0)
                    shown = ids
                } catch is MastodonError {
                    return sink.close(.sessionEnded)
                } catch let error as RPCError where error.reason == "not_found" {
                    // A list deleted since: that stream ends, the connection's others go on.
                    return
                } catch {
                    // A service that could not answer now is asked again at the next tick.
                }
                try? await Task.sleep(for: Self.pollInterval)
            }
        }
    }

    /// The most statuses one read of a stream takes in, over as many pages as that needs.
    static let catchUpLimit = 200

    /// A page of `stream`'s statuses, newest first.
    private static func read(_ stream: Stream, cursor: String?, gateway: GatewayService, caller: EdgeCaller) async throws -> Page<Tweet> {
        let limit = PageLimit()
        return switch stream {
        case .hashtag(let tag):
            try await gateway.forwarder.call(TweetsAPI.byHashtag, HashtagPageParams(hashtag: tag, limit: limit, cursor: cursor), for: caller)
        case .everyone(_, let mediaOnly):
            try await gateway.forwarder.call(TweetsAPI.latest, LatestParams(limit: limit, cursor: cursor, mediaOnly: mediaOnly), for: caller)
        case .list(let id):
            try await gateway.forwarder.call(TimelineAPI.list, ListPageParams(listId: id, limit: limit, cursor: cursor), for: caller)
        case .user, .notifications:
            try await gateway.forwarder.call(TimelineAPI.home, PageParams(limit: limit, cursor: cursor), for: caller)
        case .direct: Page(items: [], nextCursor: nil)
        }
    }

    /// A pushed `notifications.event` as a Notification's JSON; nil for the other events
    /// (withdrawals, resyncs) and for message notifications, which stay with messaging.
    static func notification(_ frame: Data, renderer: MastodonRenderer) -> String? {
        guard let pushed = try? JSONDecoder().decode(JSONValue.self, from: frame), let event = pushed["params"]?["event"],
            event["type"] == "notification", let notification = event["notification"],
            let item = try? RawJSON(encoding: notification).decode(NotificationItem.self), item.type != .message,
            let entity = try? renderer.notification(item)
        else { return nil }
        return text(entity)
    }

    static func text(_ value: JSONValue) -> String {
        value.jsonBytes.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    static func text(_ value: RawJSON) -> String {
        String(decoding: value.bytes, as: UTF8.self)
    }
}
