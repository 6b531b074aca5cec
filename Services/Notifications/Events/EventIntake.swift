import Foundation
import RPC
import ServiceKit

/// What each consumed event means for notifications (payloads as ROUND 3 documents them: ids as
/// decimal strings, times RFC 3339). Nobody is ever notified of their own action.
enum EventIntake {
    /// The changes `event` makes; none for an event type notifications does not use, or a payload
    /// it cannot read (logged by the caller).
    static func changes(of event: DomainEvent) throws(IntakeError) -> [NotificationStore.Change] {
        let payload = Payload(event.payload)
        switch (event.topic, event.type) {
        case ("graph", "follow"):
            let (follower, followee) = (try payload.id("followerId"), try payload.id("followeeId"))
            return add(to: followee, .follow, actor: follower, key: NotificationKey.follow(actor: follower), at: payload.time("at"))
        case ("graph", "unfollow"):
            let (follower, followee) = (try payload.id("followerId"), try payload.id("followeeId"))
            return [.withdraw(recipient: followee, keys: [NotificationKey.follow(actor: follower)])]
        case ("tweets", "created"):
            return try created(payload)
        case ("tweets", "deleted"):
            return try deleted(payload)
        case ("tweets", "liked"):
            let (tweet, author, liker) = (try payload.id("tweetId"), try payload.id("authorId"), try payload.id("userId"))
            return add(
                to: author, .like, actor: liker, tweet: tweet, key: NotificationKey.like(tweet: tweet, actor: liker),
                at: payload.time("at"))
        case ("tweets", "unliked"):
            let (tweet, author, liker) = (try payload.id("tweetId"), try payload.id("authorId"), try payload.id("userId"))
            return [.withdraw(recipient: author, keys: [NotificationKey.like(tweet: tweet, actor: liker)])]
        case ("messaging", "message"):
            let (message, conversation, sender) =
                (try payload.id("messageId"), try payload.id("conversationId"), try payload.id("senderId"))
            let at = payload.time("createdAt")
            return try payload.ids("offlineRecipientIds").flatMap { recipient in
                add(
                    to: recipient, .message, actor: sender, conversation: conversation,
                    key: NotificationKey.message(message), at: at)
            }
        default:
            return []
        }
    }

    /// A reply notifies the author replied to; a mention notifies each user mentioned, except that
    /// author (the reply says it already).
    private static func created(_ payload: Payload) throws(IntakeError) -> [NotificationStore.Change] {
        let (tweet, author) = (try payload.id("tweetId"), try payload.id("authorId"))
        let repliedTo = try payload.optionalID("replyToAuthorId")
        let at = payload.time("createdAt")
        var changes: [NotificationStore.Change] = []
        if let repliedTo {
            changes += add(to: repliedTo, .reply, actor: author, tweet: tweet, key: NotificationKey.reply(tweet: tweet), at: at)
        }
        for mentioned in Set(try payload.ids("mentionIds")).sorted() where mentioned != repliedTo {
            changes += add(to: mentioned, .mention, actor: author, tweet: tweet, key: NotificationKey.mention(tweet: tweet), at: at)
        }
        return changes
    }

    /// A deleted tweet takes back its reply and mention notifications, and the likes it had.
    private static func deleted(_ payload: Payload) throws(IntakeError) -> [NotificationStore.Change] {
        let (tweet, author) = (try payload.id("tweetId"), try payload.id("authorId"))
        var changes: [NotificationStore.Change] = [
            .withdrawPrefix(recipient: author, prefix: NotificationKey.likes(tweet: tweet))
        ]
        if let repliedTo = try payload.optionalID("replyToAuthorId") {
            changes.append(.withdraw(recipient: repliedTo, keys: [NotificationKey.reply(tweet: tweet)]))
        }
        for mentioned in Set(try payload.ids("mentionIds")).sorted() {
            changes.append(.withdraw(recipient: mentioned, keys: [NotificationKey.mention(tweet: tweet)]))
        }
        return changes
    }

    private static func add(
        to recipient: Int64, _ kind: NotificationKind, actor: Int64, tweet: Int64? = nil, conversation: Int64? = nil,
        key: String, at: Date
    ) -> [NotificationStore.Change] {
        guard recipient != actor else { return [] }
        return [
            .add(NewNotification(
                recipient: recipient, kind: kind, actor: actor, tweet: tweet, conversation: conversation, key: key,
                createdAt: at))
        ]
    }
}

/// An event payload notifications cannot read.
struct IntakeError: Error, CustomStringConvertible {
    var field: String
    var description: String { "the event payload has no valid \(field)" }
}

/// Typed reads of an event payload.
private struct Payload {
    let value: JSONValue

    init(_ value: JSONValue) {
        self.value = value
    }

    func id(_ field: String) throws(IntakeError) -> Int64 {
        guard let id = try optionalID(field) else { throw IntakeError(field: field) }
        return id
    }

    func optionalID(_ field: String) throws(IntakeError) -> Int64? {
        guard let item = value[field], !item.isNull else { return nil }
        guard let id = Self.parse(item) else { throw IntakeError(field: field) }
        return id
    }

    func ids(_ field: String) throws(IntakeError) -> [Int64] {
        guard let item = value[field], !item.isNull else { return [] }
        guard let items = item.arrayValue else { throw IntakeError(field: field) }
        var ids: [Int64] = []
        for item in items {
            guard let id = Self.parse(item) else { throw IntakeError(field: field) }
            ids.append(id)
        }
        return ids
    }

    /// The event's time; now when it is missing (the time only orders the display, never identity).
    func time(_ field: String) -> Date {
        value[field]?.stringValue.flatMap(RFC3339.parse) ?? Date()
    }

    private static func parse(_ item: JSONValue) -> Int64? {
        if let text = item.stringValue, let id = Int64(text), id > 0 { return id }
        if let number = item.intValue, number > 0 { return number }
        return nil
    }
}
