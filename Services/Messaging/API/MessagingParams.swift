import AviaryAPI
import RPC

/// Params of `messaging.openDirect`.
struct OpenDirectParams: Decodable, Sendable {
    var userId: EntityID
}

/// Params of `messaging.createGroup`.
struct CreateGroupParams: Decodable, Sendable {
    var title: String
    var memberIds: [EntityID]
}

/// Params of `messaging.addMembers`.
struct AddMembersParams: Decodable, Sendable {
    var conversationId: EntityID
    var memberIds: [EntityID]
}

/// Params naming one conversation (`messaging.leave`).
struct ConversationParams: Decodable, Sendable {
    var conversationId: EntityID
}

/// Params of `messaging.rename`.
struct RenameParams: Decodable, Sendable {
    var conversationId: EntityID
    var title: String
}

/// Params of `messaging.conversations`.
struct ConversationPageParams: Decodable, Sendable {
    var limit: PageLimit?
    var cursor: String?
}

/// Params of `messaging.send`.
struct SendParams: Decodable, Sendable {
    var conversationId: EntityID
    var text: String?
    var mediaId: EntityID?
    var clientMessageId: String?
}

/// Params of `messaging.history`.
struct HistoryParams: Decodable, Sendable {
    var conversationId: EntityID
    var limit: PageLimit?
    var cursor: String?
    /// `newest` (default) pages back in time; `oldest` pages forward from the first message.
    var order: HistoryOrder?
}

/// Params of `messaging.markRead`.
struct MarkReadParams: Decodable, Sendable {
    var conversationId: EntityID
    var upTo: EntityID
}

/// Params of `messaging.typing`.
struct TypingParams: Decodable, Sendable {
    var conversationId: EntityID
    var typing: Bool
}

/// Params of `messaging.presence`.
struct PresenceParams: Decodable, Sendable {
    var userIds: [EntityID]
}

/// Params of `messaging.unsubscribe`.
struct UnsubscribeParams: Decodable, Sendable {
    var subscription: String
}

/// The result of `messaging.markRead`: what is still unread in the conversation.
struct UnreadState: Codable, Sendable {
    var unreadCount: Int64
}

/// The result of `messaging.subscribe`.
struct SubscriptionResult: Codable, Sendable {
    var subscription: String
}

