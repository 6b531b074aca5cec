import Foundation
import RPC

/// An event of the contract, named once: the topic whose stream it goes to, its type there and the
/// shape of its payload. Producers write payloads of that shape (most in the SQL statement that
/// makes the change, so that both commit together); consumers read them as `Payload`, and a test
/// decodes what each statement writes, so a renamed column fails there and not in production.
public struct EventKind<Payload: Codable & Sendable>: Sendable {
    public let topic: String
    public let type: String

    public init(topic: String, type: String) {
        self.topic = topic
        self.type = type
    }
}

/// The `graph` topic: follows and mutes, from social-graph.
public enum GraphTopic {
    public static let name = "graph"
    public static let followed = EventKind<FollowEdge>(topic: name, type: "follow")
    public static let unfollowed = EventKind<FollowEdge>(topic: name, type: "unfollow")
    /// A mute made (or changed): the muted user's tweets leave the muter's home timeline.
    public static let muted = EventKind<MuteEdge>(topic: name, type: "mute")
    /// A mute lifted, or expired, while the muter follows the muted user: their tweets come back.
    public static let unmuted = EventKind<MuteEdge>(topic: name, type: "unmute")
}

/// A mute made or lifted; `at` is when.
public struct MuteEdge: Codable, Sendable, Hashable {
    public var muterId: EntityID
    public var mutedId: EntityID
    public var at: Date

    public init(muterId: EntityID, mutedId: EntityID, at: Date) {
        self.muterId = muterId
        self.mutedId = mutedId
        self.at = at
    }
}

/// A follow made or taken back; `at` is when (for an unfollow, when it was taken back).
public struct FollowEdge: Codable, Sendable, Hashable {
    public var followerId: EntityID
    public var followeeId: EntityID
    public var at: Date

    public init(followerId: EntityID, followeeId: EntityID, at: Date) {
        self.followerId = followerId
        self.followeeId = followeeId
        self.at = at
    }
}

/// The `tweets` topic: tweets posted and deleted, likes given and taken back, from tweets.
public enum TweetsTopic {
    public static let name = "tweets"
    public static let created = EventKind<TweetCreated>(topic: name, type: "created")
    public static let deleted = EventKind<TweetDeleted>(topic: name, type: "deleted")
    public static let liked = EventKind<Liked>(topic: name, type: "liked")
    public static let unliked = EventKind<Unliked>(topic: name, type: "unliked")
}

/// A tweet posted: who it replies to and who it mentions (its author left out); for a repost, the
/// original and its author; for a quote, the quoted tweet and its author.
public struct TweetCreated: Codable, Sendable, Hashable {
    public var tweetId: EntityID
    public var authorId: EntityID
    public var replyTo: EntityID?
    public var replyToAuthorId: EntityID?
    public var mentionIds: [EntityID]
    public var repostOf: EntityID?
    public var repostOfAuthorId: EntityID?
    public var quoteOf: EntityID?
    public var quoteOfAuthorId: EntityID?
    public var createdAt: Date
}

/// A tweet deleted (a repost taken back), with what it replied to, mentioned, reposted and quoted,
/// so that what it caused is taken back.
public struct TweetDeleted: Codable, Sendable, Hashable {
    public var tweetId: EntityID
    public var authorId: EntityID
    public var replyTo: EntityID?
    public var replyToAuthorId: EntityID?
    public var mentionIds: [EntityID]
    public var repostOf: EntityID?
    public var repostOfAuthorId: EntityID?
    public var quoteOf: EntityID?
    public var quoteOfAuthorId: EntityID?
}

/// `userId` liked `tweetId` (written by `authorId`) at `at`.
public struct Liked: Codable, Sendable, Hashable {
    public var tweetId: EntityID
    public var authorId: EntityID
    public var userId: EntityID
    public var at: Date
}

/// `userId` took back their like of `tweetId` (written by `authorId`).
public struct Unliked: Codable, Sendable, Hashable {
    public var tweetId: EntityID
    public var authorId: EntityID
    public var userId: EntityID
}

/// The `messaging` topic: messages sent, from messaging.
public enum MessagingTopic {
    public static let name = "messaging"
    public static let sent = EventKind<MessageSent>(topic: name, type: "message")
}

/// A message sent. As stored it names every other member (`recipientIds`); the relay then keeps
/// only those with no live subscription (`offlineRecipientIds`), the ones notifications tells.
public struct MessageSent: Codable, Sendable, Hashable {
    public var messageId: EntityID
    public var conversationId: EntityID
    public var senderId: EntityID
    public var recipientIds: [EntityID]?
    public var offlineRecipientIds: [EntityID]?
    public var createdAt: Date
}

/// The `users` topic: profile changes and suspensions, from auth.
public enum UsersTopic {
    public static let name = "users"
    public static let updated = EventKind<ProfileChanged>(topic: name, type: "updated")
    /// An admin suspended the account: its tweets leave every read.
    public static let suspended = EventKind<ProfileChanged>(topic: name, type: "suspended")
    /// The suspension was lifted: its tweets are shown again.
    public static let reinstated = EventKind<ProfileChanged>(topic: name, type: "reinstated")
    /// The user deleted their account: every service erases what it keeps of them.
    public static let deleted = EventKind<ProfileChanged>(topic: name, type: "deleted")
}

/// A user's name, username or picture changed, or their account was suspended, reinstated or
/// deleted: what shows them must be built again, or erased.
public struct ProfileChanged: Codable, Sendable, Hashable {
    public var userId: EntityID
}
