import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Logging
import ServiceKit

/// Sends the queued Web Pushes (``PushStore``) every ``interval``: each claimed for a lease, so an
/// instance that dies sending leaves it to another; sent concurrently, each within
/// ``PushSender/timeout``. A 2xx ends it; 404 or 410 deletes the subscription (the browser or
/// app dropped it); 429, 5xx and failures to connect are tried again, waiting twice as long each
/// time (up to an hour), ``maxAttempts`` times in all; any other answer drops the push.
///
/// The payload is Mastodon's, which Web Push clients of social apps read: `notification_id`,
/// `notification_type` (Mastodon's name for the kind), `title`, `body`, `icon`, `access_token`
/// (the subscription's `clientToken`) and `preferred_locale`.
final class PushDelivery: Sendable {
    let store: PushStore
    let sender: PushSender
    let hydrator: NotificationHydrator
    let resources: ServiceResources
    let contact: String
    let logger: Logger
    private let key = Locked<VAPIDKey?>(nil)

    static let interval = Duration.seconds(1)
    static let batch = 50
    static let lease = Duration.seconds(60)
    static let maxAttempts = 8

    init(store: PushStore, sender: PushSender, hydrator: NotificationHydrator, resources: ServiceResources, contact: String) {
        self.store = store
        self.sender = sender
        self.hydrator = hydrator
        self.resources = resources
        self.contact = contact
        logger = resources.logger
    }

    /// The server's VAPID key, read (or made) once.
    func vapidKey() async throws -> VAPIDKey {
        if let known = key.withLock({ $0 }) { return known }
        let loaded = try await store.vapidKey(contact: contact)
        key.withLock { $0 = loaded }
        return loaded
    }

    func deliver() async {
        do {
            let claimed = try await store.claim(limit: Self.batch, lease: Self.lease)
            guard !claimed.isEmpty else { return }
            let vapid = try await vapidKey()
            // One hydration for the batch, for no viewer (a payload names the actor and the tweet's
            // text), as live delivery does.
            let rows = Dictionary(claimed.compactMap { $0.notification.map { ($0.id, $0) } }) { first, _ in first }
            let items = try await hydrator.items(rows.values.sorted { $0.id < $1.id }, viewer: nil, context: nil)
            let byID = Dictionary(items.map { ($0.id.value, $0) }) { first, _ in first }
            await withTaskGroup(of: Void.self) { group in
                for push in claimed {
                    let item = push.notification.flatMap { byID[$0.id] }
                    group.addTask { await self.send(push, item, vapid: vapid) }
                }
            }
        } catch {
            logger.warning("could not read the pushes to send; trying again", metadata: ["error": "\(error)"])
        }
    }

    /// Sends `push`, whose notification is `item` (nil when it was withdrawn, or its actor is gone).
    private func send(_ push: PushStore.Claimed, _ item: NotificationItem?, vapid: VAPIDKey) async {
        let subscription = push.subscription
        do {
            guard let item, try await policyAllows(subscription, item.actor.id.value),
                let subscriber = try? WebPushCrypto.Subscriber(p256dh: subscription.p256dh, auth: subscription.auth)
            else { return try await store.finish(push.id) }
            let endpoint = try PushEndpoint(subscription.endpoint, allowPrivate: sender.allowPrivate)
            let sealed = try WebPushCrypto.seal(try Self.payload(item, clientToken: subscription.clientToken), to: subscriber, standard: subscription.standard)
            let headers = Self.merged(sealed.headers + (try vapid.headers(for: endpoint.origin, standard: subscription.standard)))
            let status = try await sender.post(endpoint, body: sealed.body, headers: headers)
            switch status {
            case 200..<300:
                try await store.finish(push.id)
            case 404, 410:
                logger.info("a push endpoint is gone; its subscription is deleted", metadata: ["push.status": "\(status)"])
                try await store.delete(subscription: subscription.id)
            case 429, 500..<600:
                try await retry(push, because: "the push service answered \(status)")
            default:
                logger.warning("a push service refused a push; it is dropped", metadata: ["push.status": "\(status)"])
                try await store.finish(push.id)
            }
        } catch {
            try? await retry(push, because: "\(error)")
        }
    }

    private func retry(_ push: PushStore.Claimed, because reason: String) async throws {
        guard push.attempts < Self.maxAttempts else {
            logger.warning("a push failed \(push.attempts) times; it is dropped", metadata: ["error": "\(reason)"])
            return try await store.finish(push.id)
        }
        try await store.retry(push.id, after: .seconds(min(1 << push.attempts, 3600)))
    }

    /// Whether the subscription's policy lets `actor`'s action push (one `graph.relationships`
    /// call for `followed` and `follower`).
    private func policyAllows(_ subscription: PushStore.Subscription, _ actor: Int64) async throws -> Bool {
        switch subscription.policy {
        case .all: return true
        case .none: return false
        case .followed, .follower:
            let relation = try await resources.peers.graph.relationships(
                RelationshipBatchParams(viewerId: EntityID(subscription.user), ids: [EntityID(actor)]), context: nil
            ).first
            return subscription.policy == .followed ? relation?.isFollowed == true : relation?.followsYou == true
        }
    }

    /// Mastodon's name of each kind, which its apps show.
    static func mastodonType(_ kind: NotificationKind) -> String {
        switch kind {
        case .like: "favourite"
        case .repost: "reblog"
        case .reply: "mention"
        case .follow, .mention, .quote, .message: kind.rawValue
        }
    }

    private struct TweetText: Decodable {
        var text: String?
    }

    static func payload(_ item: NotificationItem, clientToken: String?) throws -> Data {
        let name = item.actor.fullname.isEmpty ? "@" + item.actor.username : item.actor.fullname
        let title =
            switch item.type {
            case .follow: "\(name) followed you"
            case .like: "\(name) liked your post"
            case .repost: "\(name) reposted your post"
            case .quote: "\(name) quoted your post"
            case .reply: "\(name) replied to you"
            case .mention: "\(name) mentioned you"
            case .message: "\(name) sent you a message"
            }
        let text = item.tweet.flatMap { try? $0.decode(TweetText.self) }?.text ?? ""
        var payload: [String: JSONValue] = [
            "notification_id": .string(item.id.description), "notification_type": .string(mastodonType(item.type)),
            "title": .string(title), "body": .string(String(text.prefix(140))), "preferred_locale": "en",
            "icon": item.actor.profileImageUrl.map { .string($0) } ?? .null,
        ]
        if let clientToken { payload["access_token"] = .string(clientToken) }
        return Data(try RawJSON(encoding: JSONValue.object(payload)).bytes)
    }

    /// One `Crypto-Key` header of the encryption's `dh` and the signature's `p256ecdsa`, as the
    /// `aesgcm` draft writes them.
    static func merged(_ headers: [(String, String)]) -> [(String, String)] {
        let keys = headers.filter { $0.0 == "Crypto-Key" }.map(\.1)
        guard keys.count > 1 else { return headers }
        return headers.filter { $0.0 != "Crypto-Key" } + [("Crypto-Key", keys.joined(separator: ";"))]
    }
}
