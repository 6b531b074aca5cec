import Foundation
import RPC

/// Whether a conversation is between exactly two people or a named group.
public enum ConversationKind: String, Codable, Sendable, Hashable, JSONSchemaEnum {
    case direct
    case group
}

/// What a message carries: text alone, or an image or a video (with or without text); or, for
/// `system`, a change to the group that the history records (`Message.system`).
public enum MessageKind: String, Codable, Sendable, Hashable, JSONSchemaEnum {
    case text
    case image
    case video
    case system
}

/// A member's part in a group: its owner (one), its admins, and the rest. Direct conversations
/// have only members.
public enum MemberRole: String, Codable, Sendable, Hashable, JSONSchemaEnum {
    case owner
    case admin
    case member
}

/// What changed in a conversation, as its `conversation` events and the system messages of its
/// history name it.
public enum ConversationChange: String, Codable, Sendable, Hashable, JSONSchemaEnum {
    case created
    case membersAdded
    case memberLeft
    case memberRemoved
    case renamed
    case pictureChanged
    case roleChanged
    case ownershipTransferred
}

/// The change a system message records: who made it, whom it concerns (the members added or
/// removed, the one who left, whose role changed or who now owns the group), and the new title
/// or role where there is one.
public struct SystemChange: Codable, Sendable, Hashable {
    public var change: ConversationChange
    public var actorId: EntityID
    public var userIds: [EntityID]
    public var title: String?
    public var role: MemberRole?

    public init(change: ConversationChange, actorId: EntityID, userIds: [EntityID], title: String? = nil, role: MemberRole? = nil) {
        self.change = change
        self.actorId = actorId
        self.userIds = userIds
        self.title = title
        self.role = role
    }
}

/// A message of a conversation (contract §2). `readBy` lists the members whose read marker is at
/// or past it. Absent values are sent as `null`, never left out.
///
/// An edited message has `editedAt`. A message its sender deleted for everyone stays in the history
/// as a tombstone: `deleted` true, without text or media.
public struct Message: Codable, Sendable, Hashable {
    public var id: EntityID
    public var conversationId: EntityID
    public var sender: UserSummary
    public var text: String?
    public var media: Media?
    public var kind: MessageKind
    public var createdAt: Date
    public var readBy: [EntityID]
    public var editedAt: Date?
    public var deleted: Bool
    /// Each emoji members reacted with, most used first.
    public var reactions: [Reaction]
    /// The message this one replies to, quoted as it is now.
    public var replyTo: QuotedMessage?
    /// For kind `system`: the change to the group it records (its sender made it).
    public var system: SystemChange?

    public init(
        id: EntityID, conversationId: EntityID, sender: UserSummary, text: String?, media: Media?, kind: MessageKind,
        createdAt: Date, readBy: [EntityID], editedAt: Date? = nil, deleted: Bool = false, reactions: [Reaction] = [],
        replyTo: QuotedMessage? = nil, system: SystemChange? = nil
    ) {
        self.id = id
        self.conversationId = conversationId
        self.sender = sender
        self.text = text
        self.media = media
        self.kind = kind
        self.createdAt = createdAt
        self.readBy = readBy
        self.editedAt = editedAt
        self.deleted = deleted
        self.reactions = reactions
        self.replyTo = replyTo
        self.system = system
    }

    private enum CodingKeys: String, CodingKey {
        case id, conversationId, sender, text, media, kind, createdAt, readBy, editedAt, deleted, reactions, replyTo, system
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(conversationId, forKey: .conversationId)
        try container.encode(sender, forKey: .sender)
        try container.encode(text, forKey: .text)
        try container.encode(media, forKey: .media)
        try container.encode(kind, forKey: .kind)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(readBy, forKey: .readBy)
        try container.encode(editedAt, forKey: .editedAt)
        try container.encode(deleted, forKey: .deleted)
        try container.encode(reactions, forKey: .reactions)
        try container.encode(replyTo, forKey: .replyTo)
        try container.encode(system, forKey: .system)
    }
}

/// The message another replies to, as the reply shows it: without text once deleted.
public struct QuotedMessage: Codable, Sendable, Hashable {
    public var id: EntityID
    public var sender: UserSummary
    public var text: String?
    public var kind: MessageKind
    public var deleted: Bool

    public init(id: EntityID, sender: UserSummary, text: String?, kind: MessageKind, deleted: Bool) {
        self.id = id
        self.sender = sender
        self.text = text
        self.kind = kind
        self.deleted = deleted
    }

    private enum CodingKeys: String, CodingKey {
        case id, sender, text, kind, deleted
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(sender, forKey: .sender)
        try container.encode(text, forKey: .text)
        try container.encode(kind, forKey: .kind)
        try container.encode(deleted, forKey: .deleted)
    }
}

/// One emoji on a message: how many members reacted with it, and whether the caller is one.
public struct Reaction: Codable, Sendable, Hashable {
    public var emoji: String
    public var count: Int
    public var reactedByMe: Bool

    public init(emoji: String, count: Int, reactedByMe: Bool) {
        self.emoji = emoji
        self.count = count
        self.reactedByMe = reactedByMe
    }
}

/// A conversation as one member sees it (contract §2): `unreadCount` and `lastMessage.readBy`
/// are as of the call. Absent values are sent as `null`.
public struct Conversation: Codable, Sendable, Hashable {
    public var id: EntityID
    public var kind: ConversationKind
    public var title: String?
    public var members: [UserSummary]
    public var lastMessage: Message?
    public var lastUpdated: Date
    public var unreadCount: Int64
    /// Whether the caller muted it (``MessagingAPI/mute``): its messages notify them no more.
    public var muted: Bool
    /// A group's owner and admins (null and empty for a direct conversation).
    public var ownerId: EntityID?
    public var adminIds: [EntityID]
    /// A group's picture.
    public var picture: Media?

    public init(
        id: EntityID, kind: ConversationKind, title: String?, members: [UserSummary], lastMessage: Message?,
        lastUpdated: Date, unreadCount: Int64, muted: Bool = false, ownerId: EntityID? = nil, adminIds: [EntityID] = [],
        picture: Media? = nil
    ) {
        self.id = id
        self.kind = kind
        self.title = title
        self.members = members
        self.lastMessage = lastMessage
        self.lastUpdated = lastUpdated
        self.unreadCount = unreadCount
        self.muted = muted
        self.ownerId = ownerId
        self.adminIds = adminIds
        self.picture = picture
    }

    private enum CodingKeys: String, CodingKey {
        case id, kind, title, members, lastMessage, lastUpdated, unreadCount, muted, ownerId, adminIds, picture
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(title, forKey: .title)
        try container.encode(members, forKey: .members)
        try container.encode(lastMessage, forKey: .lastMessage)
        try container.encode(lastUpdated, forKey: .lastUpdated)
        try container.encode(unreadCount, forKey: .unreadCount)
        try container.encode(muted, forKey: .muted)
        try container.encode(ownerId, forKey: .ownerId)
        try container.encode(adminIds, forKey: .adminIds)
        try container.encode(picture, forKey: .picture)
    }
}

/// One user's presence in messaging: online while a `messaging.subscribe` stream of theirs is
/// open or within a minute of their last messaging call; `lastSeen` is null for someone never seen.
public struct Presence: Codable, Sendable, Hashable {
    public var userId: EntityID
    public var online: Bool
    public var lastSeen: Date?

    public init(userId: EntityID, online: Bool, lastSeen: Date?) {
        self.userId = userId
        self.online = online
        self.lastSeen = lastSeen
    }

    private enum CodingKeys: String, CodingKey {
        case userId, online, lastSeen
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userId, forKey: .userId)
        try container.encode(online, forKey: .online)
        try container.encode(lastSeen, forKey: .lastSeen)
    }
}
