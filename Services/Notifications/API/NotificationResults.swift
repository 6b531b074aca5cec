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
    /// The tweet as the tweets service encoded it (`Tweet`); the wire encoder splices it in undecoded.
    var tweet: RawJSON?
    var conversationId: EntityID?
    var createdAt: Date
    var read: Bool
    var count: Int?
    var actors: [UserSummary]?

    private enum CodingKeys: String, CodingKey {
        case id, type, actor, tweet, conversationId, createdAt, read, count, actors
    }

    init(
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
    func encode(to encoder: any Encoder) throws {
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
}

extension NotificationItem {
    /// The page of `items`.
    static func page(_ items: [NotificationItem], nextCursor: String?) throws -> RawJSON {
        var page = PageJSON()
        for item in items { page.append(try WireEncoding.encode(item)) }
        return page.finish(nextCursor: nextCursor)
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
enum NotificationEvent {
    static func json(_ item: NotificationItem) throws -> RawJSON {
        var bytes = Array(#"{"type":"notification","notification":"#.utf8)
        bytes.append(contentsOf: try WireEncoding.encode(item))
        bytes.append(UInt8(ascii: "}"))
        return RawJSON(unchecked: bytes)
    }

    /// The id of the notification an encoded event carries, to drop duplicates after a catch-up.
    struct Peek: Decodable {
        struct Inner: Decodable { var id: EntityID }
        var notification: Inner?
    }
}
