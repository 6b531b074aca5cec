import AviaryJSON
import Foundation
import RPC

/// notifications' methods: the caller's notifications, read and live.
public enum NotificationsAPI {
    public static let list = RPCMethod<NotificationListParams, Page<NotificationItem>>(
        "notifications.list", access: .user,
        summary: """
            Page of the caller's notifications, newest first (limit default 20, at most 100). types keeps only \
            those kinds (follow, like, reply, mention, message). With grouped: true, likes of the same tweet and \
            follows received in the same window (a day by default) make one item whose count says how many \
            notifications it stands for and whose actors lists up to three of their actors, newest first; id, \
            actor and createdAt are then the newest one's, and read is true only when all of them are read.
            """)

    public static let unreadCount = RPCMethod<Empty, UnreadCount>(
        "notifications.unreadCount", access: .user, summary: "How many of the caller's notifications are unread: {count}.")

    public static let markRead = RPCMethod<MarkNotificationsReadParams, UnreadCount>(
        "notifications.markRead", access: .user,
        summary: """
            Marks the caller's notifications up to upTo (a notification id; all when omitted) read; returns {count}, \
            the unread ones left.
            """)

    public static let dismiss = RPCMethod<NotificationParams, Empty>(
        "notifications.dismiss", access: .user,
        summary: """
            Deletes the caller's notification notificationId (not_found when the caller has none by that id). A later \
            event may notify of the same thing again (a new like after an unlike).
            """)

    public static let clear = RPCMethod<Empty, Empty>(
        "notifications.clear", access: .user, summary: "Deletes all of the caller's notifications.")

    public static let subscribe = RPCMethod<NotificationSubscribeParams, SubscriptionResult>(
        "notifications.subscribe", access: .user, summary: subscribeSummary(subscriptionsPerConnection: 8))

    /// `notifications.subscribe`'s summary where a user may hold `subscriptionsPerConnection`
    /// subscriptions on one connection.
    public static func subscribeSummary(subscriptionsPerConnection: Int) -> String {
        """
        Subscribes to the caller's notifications, on this connection: events {type: "notification", notification} \
        as they are made, {type: "withdrawn", notificationId} when an unlike, unfollow or deletion takes one back, \
        {type: "resync"} when some may have been missed (fetch the list), and {type: "unsubscribed", reason: \
        "unauthenticated"} last when the session that subscribed ends (logout, password change). With lastId, the notifications \
        after it are sent first, oldest first (at most 1,000, then a resync), with no gap or repeat before the live ones. \
        A user holds at most \(subscriptionsPerConnection) subscriptions on one connection (conflict beyond).
        """
    }

    public static let unsubscribe = RPCMethod<UnsubscribeParams, Empty>(
        "notifications.unsubscribe", access: .user,
        summary: "Ends a subscription of this connection. An unknown subscription is not_found.")

    // Web Push: one subscription per session; its types are in PushAPI.swift.

    public static let setPush = RPCMethod<PushSubscriptionParams, PushSubscription>(
        "notifications.setPush", access: .user,
        summary: """
            Makes the Web Push subscription of the caller's session (replacing the one it had): each new notification \
            of kinds (default all) is encrypted to p256dh and auth (the browser's or app's keys, base64url or base64) and \
            POSTed to endpoint (https, at most 2,048 characters), signed with the server's VAPID key (serverKey); \
            standard true encrypts as RFC 8291 (aes128gcm), false as Mastodon's legacy aesgcm. policy says whose \
            actions push: all, followed (users the caller follows), follower (users who follow the caller) or none. \
            clientToken (at most 512 characters) is echoed in each payload as access_token. A subscription whose \
            endpoint answers 404 or 410 is deleted.
            """)

    public static let push = RPCMethod<Empty, PushSubscription>(
        "notifications.push", access: .user, summary: "The Web Push subscription of the caller's session; not_found when it has none.")

    public static let updatePush = RPCMethod<PushUpdateParams, PushSubscription>(
        "notifications.updatePush", access: .user,
        summary: "Changes the kinds or policy of the session's Web Push subscription; not_found when it has none.")

    public static let pushKey = RPCMethod<Empty, PushKey>(
        "notifications.pushKey", access: .anonymous,
        summary: "The server's VAPID public key (base64url), which browsers subscribe with: {serverKey}.")

    public static let deletePush = RPCMethod<Empty, Empty>(
        "notifications.deletePush", access: .user, summary: "Deletes the session's Web Push subscription. Idempotent.")
}

/// What a notification tells its recipient about (`Notification.type`).
public enum NotificationKind: String, Codable, Sendable, Hashable, CaseIterable, JSONSchemaEnum {
    case follow
    case like
    case reply
    case mention
    case message
    /// Someone reposted the recipient's tweet (`tweet` is the original).
    case repost
    /// Someone quoted the recipient's tweet (`tweet` is the quoting one).
    case quote

    /// Likes and reposts of one tweet, and follows of the recipient, may be grouped by `notifications.list`.
    public var isGroupable: Bool { self == .like || self == .repost || self == .follow }
}

/// Params of `notifications.list`.
public struct NotificationListParams: Codable, Sendable {
    public var limit: PageLimit?
    public var cursor: String?
    /// Only these kinds; all when omitted or empty.
    public var types: [NotificationKind]?
    /// Group likes of the same tweet and follows that fall in the same window into one item.
    public var grouped: Bool?

    public init(limit: PageLimit? = nil, cursor: String? = nil, types: [NotificationKind]? = nil, grouped: Bool? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.types = types
        self.grouped = grouped
    }
}

/// Params of `notifications.markRead`.
public struct MarkNotificationsReadParams: Codable, Sendable {
    /// Marks this notification and every older one read; all when omitted.
    public var upTo: EntityID?

    public init(upTo: EntityID? = nil) {
        self.upTo = upTo
    }
}

/// Params naming one of the caller's notifications (`notifications.dismiss`).
public struct NotificationParams: Codable, Sendable {
    public var notificationId: EntityID

    public init(notificationId: EntityID) {
        self.notificationId = notificationId
    }
}

/// Params of `notifications.subscribe`.
public struct NotificationSubscribeParams: Codable, Sendable {
    /// The id of the last notification the client saw: those after it are pushed first, oldest first.
    public var lastId: EntityID?

    public init(lastId: EntityID? = nil) {
        self.lastId = lastId
    }
}

/// Params of a live subscription's end (`notifications.unsubscribe`, `messaging.unsubscribe`).
public struct UnsubscribeParams: Codable, Sendable {
    public var subscription: String

    public init(subscription: String) {
        self.subscription = subscription
    }
}

/// `{subscription}`: the id a live subscription's events carry.
public struct SubscriptionResult: Codable, Sendable {
    public var subscription: String

    public init(subscription: String) {
        self.subscription = subscription
    }
}

/// `{count}`: unread notifications.
public struct UnreadCount: Codable, Sendable {
    public var count: Int64

    public init(count: Int64) {
        self.count = count
    }
}

/// A notification as clients see it: `id, type, actor, tweet, conversationId, createdAt, read`.
/// Items of a grouped list also carry `count` (how many notifications the item stands for) and
/// `actors` (the most recent actors, newest first, at most three); `actor` is then the newest one
/// and `id` the newest notification's.
public struct NotificationItem: Codable, Sendable {
    public var id: EntityID
    public var type: NotificationKind
    public var actor: UserSummary
    /// The tweet (`Tweet`) as the tweets service encoded it: spliced into the answer undecoded.
    public var tweet: RawJSON?
    public var conversationId: EntityID?
    public var createdAt: Date
    public var read: Bool
    public var count: Int?
    public var actors: [UserSummary]?

    private enum CodingKeys: String, CodingKey {
        case id, type, actor, tweet, conversationId, createdAt, read, count, actors
    }

    public init(
        id: EntityID, type: NotificationKind, actor: UserSummary, tweet: RawJSON?, conversationId: EntityID?,
        createdAt: Date, read: Bool, count: Int? = nil, actors: [UserSummary]? = nil
    ) {
        self.id = id
        self.type = type
        self.actor = actor
        self.tweet = tweet
        self.conversationId = conversationId
        self.createdAt = createdAt
        self.read = read
        self.count = count
        self.actors = actors
    }

    /// An absent `tweet` or `conversationId` is written as `null`; `count` and `actors` only in
    /// grouped lists.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encode(actor, forKey: .actor)
        try container.encode(conversationId, forKey: .conversationId)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(read, forKey: .read)
        try container.encodeIfPresent(count, forKey: .count)
        try container.encodeIfPresent(actors, forKey: .actors)
        try container.encode(tweet ?? .null, forKey: .tweet)
    }

    /// The tweet decoded, when it has one.
    public func decodedTweet() throws -> Tweet? {
        try tweet.flatMap { $0 == .null ? nil : try $0.decode(Tweet.self) }
    }
}
