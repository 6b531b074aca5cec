import RPC

/// messaging's methods: conversations, messages and presence for apps, and the membership check
/// media makes.
public enum MessagingAPI {
    public static let openDirect = RPCMethod<OpenDirectParams, Conversation>(
        "messaging.openDirect", access: .user,
        summary: """
            The direct conversation of the caller and userId, made on first open: the same one every time for the \
            same pair. Oneself is a validation error; an unknown user is not_found.
            """)

    public static let createGroup = RPCMethod<CreateGroupParams, Conversation>(
        "messaging.createGroup", access: .user,
        summary: """
            A new group conversation with title (1 to 100 characters) and memberIds (other users; at most 256 \
            members with the caller). Unknown users are not_found.
            """)

    public static let addMembers = RPCMethod<AddMembersParams, Conversation>(
        "messaging.addMembers", access: .user,
        summary: """
            Adds memberIds to a group the caller belongs to (at most 256 members in all). New members see the \
            history but nothing of it as unread. A conversation the caller is not in is not_found.
            """)

    public static let leave = RPCMethod<ConversationParams, Conversation>(
        "messaging.leave", access: .user,
        summary: """
            The caller leaves a group at once: no more messages, history or events of it. Returns the conversation \
            as it is after. Direct conversations cannot be left. An owner who leaves hands the group to the admin, \
            or else the member, who joined first.
            """)

    public static let removeMember = RPCMethod<MemberParams, Conversation>(
        "messaging.removeMember", access: .user,
        summary: """
            Removes a member (userId) from a group: they lose its messages, history and events at once. The owner \
            may remove anyone else, an admin only members; forbidden for others.
            """)

    public static let setRole = RPCMethod<SetRoleParams, Conversation>(
        "messaging.setRole", access: .user,
        summary: "The owner makes a member an admin (role admin) or an admin a member again (role member); forbidden for others.")

    public static let transferOwnership = RPCMethod<MemberParams, Conversation>(
        "messaging.transferOwnership", access: .user,
        summary: "The owner hands the group to another member (userId), and stays in it as an admin; forbidden for others.")

    public static let setPicture = RPCMethod<SetPictureParams, Conversation>(
        "messaging.setPicture", access: .user,
        summary: """
            Sets a group's picture (mediaId: a finished upload of the caller's with purpose avatar), or removes it \
            (mediaId null); any member may, as with its title.
            """)

    public static let rename = RPCMethod<RenameParams, Conversation>(
        "messaging.rename", access: .user,
        summary: """
            Sets a group's title (1 to 100 characters); any member may. Direct conversations have no title.
            """)

    public static let mute = RPCMethod<MuteConversationParams, Conversation>(
        "messaging.mute", access: .user,
        summary: """
            Mutes (muted true) or unmutes a conversation of the caller's: its messages notify them no more, and \
            still count as unread and arrive live. Idempotent. Returns the conversation; not_found for one the \
            caller is not in.
            """)

    public static let conversations = RPCMethod<PageParams, Page<Conversation>>(
        "messaging.conversations", access: .user,
        summary: """
            Page of the caller's conversations, most recently updated first, each with its members, lastMessage, \
            lastUpdated and the caller's unreadCount.
            """)

    public static let send = RPCMethod<SendParams, Message>(
        "messaging.send", access: .user,
        summary: """
            Sends a message: text (at most 4,000 characters) and/or mediaId (media uploaded for this conversation), \
            optionally replying to a message of the conversation (replyTo, quoted in the Message). The same \
            clientMessageId from the same sender returns the first message instead of a second.
            """)

    /// How long after sending a message its sender may still edit it.
    public static let editWindow = Duration.seconds(15 * 60)

    public static let edit = RPCMethod<EditMessageParams, Message>(
        "messaging.edit", access: .user,
        summary: """
            Replaces the text of one of the caller's messages (messageId) within 15 minutes of sending it (at most \
            4,000 characters; empty only when it carries media). The message gets editedAt; every member hears an \
            edited event. forbidden for someone else's message or past the window, conflict for a deleted one.
            """)

    public static let delete = RPCMethod<DeleteMessageParams, Empty>(
        "messaging.delete", access: .user,
        summary: """
            Deletes a message (messageId). forEveryone (the sender only): its text and media are gone for every \
            member, a tombstone (deleted true) stays in the history, and every member hears a deleted event. \
            Otherwise only for the caller: it leaves their history. Idempotent.
            """)

    public static let react = RPCMethod<ReactParams, Message>(
        "messaging.react", access: .user,
        summary: """
            Reacts to a message (messageId) with one emoji, or takes the reaction back when it is the caller's \
            already; another emoji replaces it (one reaction per member). Returns the message; every member hears a \
            reaction event.
            """)

    public static let history = RPCMethod<HistoryParams, Page<Message>>(
        "messaging.history", access: .user,
        summary: """
            Page of a conversation's messages, newest first (order: oldest pages forward from the first message). \
            readBy lists the members who have read each one.
            """)

    public static let markRead = RPCMethod<MarkReadParams, UnreadState>(
        "messaging.markRead", access: .user,
        summary: """
            Moves the caller's read marker forward to the message upTo (never back) and tells the other members; \
            returns what is still unread.
            """)

    public static let typing = RPCMethod<TypingParams, Empty>(
        "messaging.typing", access: .user,
        summary: """
            Shows the other members that the caller is typing (typing: true) until cleared (typing: false) or 6 \
            seconds pass. Repeats within 2 seconds are absorbed.
            """)

    public static let presence = RPCMethod<PresenceParams, [Presence]>(
        "messaging.presence", access: .user,
        summary: """
            Whether each of userIds (at most 100) is online (a messaging.subscribe stream open, or a messaging call \
            in the last minute) and when they were last seen (null: never). Only the caller's own presence and that \
            of users who took part (made, sent in or read) in a conversation the caller is in are told; anyone else \
            reads as offline and never seen.
            """)

    public static let unsubscribe = RPCMethod<UnsubscribeParams, Empty>(
        "messaging.unsubscribe", access: .user,
        summary: """
            Ends a subscription opened on this connection.
            """)

    public static let subscribe = RPCMethod<Empty, SubscriptionResult>(
        "messaging.subscribe", access: .user, summary: subscribeSummary(subscriptionsPerConnection: 8))

    /// `messaging.subscribe`'s summary where a user may hold `subscriptionsPerConnection`
    /// subscriptions on one connection.
    public static func subscribeSummary(subscriptionsPerConnection: Int) -> String {
        """
        Opens a subscription on this connection: notifications messaging.event with {subscription, event}, \
        event.type one of message, edited, deleted, reaction, typing, read, presence, conversation (and resync: \
        events may have been missed, \
        reload; unsubscribed, reason unauthenticated, last when the session that subscribed ends: logout, password \
        change). In a group, the message, edited, reaction, typing and read events of a member blocked either way \
        with the subscriber do not come (the history still holds the messages). A user holds at most \
        \(subscriptionsPerConnection) subscriptions on one connection (conflict beyond).
        """
    }

    public static let isMember = RPCMethod<IsMemberParams, MembershipResult>(
        "messaging.isMember", access: .internal,
        summary: "Internal. Whether userId is a current member of conversationId: {member: bool}.")

    public static let reportable = RPCMethod<ReportableParams, [Message]>(
        "messaging.reportable", access: .internal,
        summary: """
            Internal. Those of messageIds (at most 20) that senderId sent, not deleted, in conversations reporterId \
            is a current member of: the Messages a report of theirs may keep.
            """)
}

/// Params of `messaging.reportable`.
public struct ReportableParams: Codable, Sendable {
    public var reporterId: EntityID
    public var senderId: EntityID
    public var messageIds: [EntityID]

    public init(reporterId: EntityID, senderId: EntityID, messageIds: [EntityID]) {
        self.reporterId = reporterId
        self.senderId = senderId
        self.messageIds = messageIds
    }
}

/// The order of `messaging.history`.
public enum HistoryOrder: String, Codable, Sendable, JSONSchemaEnum {
    /// Newest first (the default): scrolling back in time.
    case newest
    /// Oldest first: reading forward, e.g. catching up from a known message.
    case oldest
}

/// Params of `messaging.openDirect`.
public struct OpenDirectParams: Codable, Sendable {
    public var userId: EntityID

    public init(userId: EntityID) {
        self.userId = userId
    }
}

/// Params of `messaging.createGroup`.
public struct CreateGroupParams: Codable, Sendable {
    public var title: String
    public var memberIds: [EntityID]

    public init(title: String, memberIds: [EntityID]) {
        self.title = title
        self.memberIds = memberIds
    }
}

/// Params of `messaging.addMembers`.
public struct AddMembersParams: Codable, Sendable {
    public var conversationId: EntityID
    public var memberIds: [EntityID]

    public init(conversationId: EntityID, memberIds: [EntityID]) {
        self.conversationId = conversationId
        self.memberIds = memberIds
    }
}

/// Params naming one conversation (`messaging.leave`).
public struct ConversationParams: Codable, Sendable {
    public var conversationId: EntityID

    public init(conversationId: EntityID) {
        self.conversationId = conversationId
    }
}

/// Params of `messaging.mute`.
public struct MuteConversationParams: Codable, Sendable {
    public var conversationId: EntityID
    public var muted: Bool

    public init(conversationId: EntityID, muted: Bool) {
        self.conversationId = conversationId
        self.muted = muted
    }
}

/// Params of `messaging.rename`.
public struct RenameParams: Codable, Sendable {
    public var conversationId: EntityID
    public var title: String

    public init(conversationId: EntityID, title: String) {
        self.conversationId = conversationId
        self.title = title
    }
}

/// Params naming a member of a group.
public struct MemberParams: Codable, Sendable {
    public var conversationId: EntityID
    public var userId: EntityID

    public init(conversationId: EntityID, userId: EntityID) {
        self.conversationId = conversationId
        self.userId = userId
    }
}

/// Params of `messaging.setRole`: `admin` or `member` (a group has one owner, made by
/// `messaging.transferOwnership`).
public struct SetRoleParams: Codable, Sendable {
    public var conversationId: EntityID
    public var userId: EntityID
    public var role: MemberRole

    public init(conversationId: EntityID, userId: EntityID, role: MemberRole) {
        self.conversationId = conversationId
        self.userId = userId
        self.role = role
    }
}

/// Params of `messaging.setPicture`: `mediaId` null removes the picture.
public struct SetPictureParams: Codable, Sendable {
    public var conversationId: EntityID
    public var mediaId: EntityID?

    public init(conversationId: EntityID, mediaId: EntityID?) {
        self.conversationId = conversationId
        self.mediaId = mediaId
    }
}

/// Params of `messaging.send`.
public struct SendParams: Codable, Sendable {
    public var conversationId: EntityID
    public var text: String?
    public var mediaId: EntityID?
    public var clientMessageId: String?
    /// A message of the same conversation this one replies to.
    public var replyTo: EntityID?

    public init(
        conversationId: EntityID, text: String? = nil, mediaId: EntityID? = nil, clientMessageId: String? = nil,
        replyTo: EntityID? = nil
    ) {
        self.conversationId = conversationId
        self.text = text
        self.mediaId = mediaId
        self.clientMessageId = clientMessageId
        self.replyTo = replyTo
    }
}

/// Params of `messaging.edit`.
public struct EditMessageParams: Codable, Sendable {
    public var messageId: EntityID
    public var text: String

    public init(messageId: EntityID, text: String) {
        self.messageId = messageId
        self.text = text
    }
}

/// Params of `messaging.delete`.
public struct DeleteMessageParams: Codable, Sendable {
    public var messageId: EntityID
    /// For every member (the sender only), or only for the caller (false, the default).
    public var forEveryone: Bool?

    public init(messageId: EntityID, forEveryone: Bool? = nil) {
        self.messageId = messageId
        self.forEveryone = forEveryone
    }
}

/// Params of `messaging.react`.
public struct ReactParams: Codable, Sendable {
    public var messageId: EntityID
    public var emoji: String

    public init(messageId: EntityID, emoji: String) {
        self.messageId = messageId
        self.emoji = emoji
    }
}

/// Params of `messaging.history`.
public struct HistoryParams: Codable, Sendable {
    public var conversationId: EntityID
    public var limit: PageLimit?
    public var cursor: String?
    /// `newest` (default) pages back in time; `oldest` pages forward from the first message.
    public var order: HistoryOrder?

    public init(conversationId: EntityID, limit: PageLimit? = nil, cursor: String? = nil, order: HistoryOrder? = nil) {
        self.conversationId = conversationId
        self.limit = limit
        self.cursor = cursor
        self.order = order
    }
}

/// Params of `messaging.markRead`.
public struct MarkReadParams: Codable, Sendable {
    public var conversationId: EntityID
    public var upTo: EntityID

    public init(conversationId: EntityID, upTo: EntityID) {
        self.conversationId = conversationId
        self.upTo = upTo
    }
}

/// Params of `messaging.typing`.
public struct TypingParams: Codable, Sendable {
    public var conversationId: EntityID
    public var typing: Bool

    public init(conversationId: EntityID, typing: Bool) {
        self.conversationId = conversationId
        self.typing = typing
    }
}

/// Params of `messaging.presence`.
public struct PresenceParams: Codable, Sendable {
    public var userIds: [EntityID]

    public init(userIds: [EntityID]) {
        self.userIds = userIds
    }
}

/// The result of `messaging.markRead`: what is still unread in the conversation.
public struct UnreadState: Codable, Sendable {
    public var unreadCount: Int64

    public init(unreadCount: Int64) {
        self.unreadCount = unreadCount
    }
}

/// Params of `messaging.isMember`.
public struct IsMemberParams: Codable, Sendable {
    public var conversationId: EntityID
    public var userId: EntityID

    public init(conversationId: EntityID, userId: EntityID) {
        self.conversationId = conversationId
        self.userId = userId
    }
}

/// The result of `messaging.isMember`.
public struct MembershipResult: Codable, Sendable {
    public var member: Bool

    public init(member: Bool) {
        self.member = member
    }
}
