import Foundation
import RPC

/// Whether a conversation is between exactly two people or a named group.
public enum ConversationKind: String, Codable, Sendable, Hashable, JSONSchemaEnum {
    case direct
    case group
}

/// What a message carries: text alone, or an image or a video (with or without text).
public enum MessageKind: String, Codable, Sendable, Hashable, JSONSchemaEnum {
    case text
    case image
    case video
}

/// A message of a conversation (contract §2). `readBy` lists the members whose read marker is at
/// or past it. Absent values are sent as `null`, never left out.
public struct Message: Codable, Sendable, Hashable {
    public var id: EntityID
    public var conversationId: EntityID
    public var sender: UserSummary
    public var text: String?
    public var media: Media?
    public var kind: MessageKind
    public var createdAt: Date
    public var readBy: [EntityID]

    public init(
        id: EntityID, conversationId: EntityID, sender: UserSummary, text: String?, media: Media?, kind: MessageKind,
        createdAt: Date, readBy: [EntityID]
    ) {
        self.id = id
        self.conversationId = conversationId
        self.sender = sender
        self.text = text
        self.media = media
        self.kind = kind
        self.createdAt = createdAt
        self.readBy = readBy
    }

    private enum CodingKeys: String, CodingKey {
        case id, conversationId, sender, text, media, kind, createdAt, readBy
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

    public init(
        id: EntityID, kind: ConversationKind, title: String?, members: [UserSummary], lastMessage: Message?,
        lastUpdated: Date, unreadCount: Int64, muted: Bool = false
    ) {
        self.id = id
        self.kind = kind
        self.title = title
        self.members = members
        self.lastMessage = lastMessage
        self.lastUpdated = lastUpdated
        self.unreadCount = unreadCount
        self.muted = muted
    }

    private enum CodingKeys: String, CodingKey {
        case id, kind, title, members, lastMessage, lastUpdated, unreadCount, muted
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
