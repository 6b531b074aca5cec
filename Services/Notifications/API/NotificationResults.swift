import AviaryAPI
import Foundation
import RPC

/// A notification as clients see it (contract §2): `id, type, actor, tweet, conversationId,
/// createdAt, read`. Items of a grouped list also carry `count` (how many notifications the item
/// stands for) and `actors` (the most recent actors, newest first, at most three); `actor` is then
/// the newest one and `id` the newest notification's.
struct NotificationItem: Codable, Sendable {
    var id: EntityID
    var type: NotificationKind
    var actor: UserSummary
    /// The tweet as the tweets service answered (`Tweet`), passed through.
    var tweet: JSONValue?
    var conversationId: EntityID?
    var createdAt: Date
    var read: Bool
    var count: Int?
    var actors: [UserSummary]?

    private enum CodingKeys: String, CodingKey {
        case id, type, actor, tweet, conversationId, createdAt, read, count, actors
    }

    init(
        id: EntityID, type: NotificationKind, actor: UserSummary, tweet: JSONValue?, conversationId: EntityID?,
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

    /// Absent `tweet` and `conversationId` are written as `null`; `count` and `actors` only in grouped lists.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encode(actor, forKey: .actor)
        try container.encode(tweet ?? .null, forKey: .tweet)
        try container.encode(conversationId, forKey: .conversationId)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(read, forKey: .read)
        try container.encodeIfPresent(count, forKey: .count)
        try container.encodeIfPresent(actors, forKey: .actors)
    }
}

/// `{count}`: unread notifications.
struct UnreadCount: Codable, Sendable {
    var count: Int64
}

/// `{subscription}`: the id events carry.
struct SubscriptionResult: Codable, Sendable {
    var subscription: String
}

/// The `event` of a push: `{type: "notification", notification}`.
struct NotificationEvent: Codable, Sendable {
    var type = "notification"
    var notification: NotificationItem

    /// The id of the notification an encoded event carries, to drop duplicates after a catch-up.
    struct Peek: Decodable {
        struct Inner: Decodable { var id: EntityID }
        var notification: Inner?
    }
}
