import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import Redis
import ServiceKit

/// The events `messaging.subscribe` delivers, published through the live hub to each recipient's
/// channel (so they reach subscriptions on every instance, in publishing order):
/// - `{type: "message", message}` to every member, the sender's other sessions included;
/// - `{type: "edited", message}` to every member; `{type: "deleted", conversationId, messageId,
///   forEveryone}` to every member, or to the caller's own sessions when only for them;
/// - `{type: "reaction", conversationId, messageId, userId, emoji, reactions}` to every member
///   (`emoji` null when taken back; `reactedByMe` false throughout: the event is everyone's);
/// - `{type: "typing", conversationId, userId, typing, expiresAt}` to the other members;
/// - `{type: "read", conversationId, userId, upTo, readAt}` to every member;
/// - `{type: "presence", userId, online, lastSeen}` to everyone sharing a conversation with the user;
/// - `{type: "conversation", change, conversation, actorId, userIds}` to the members before and after.
///
/// A member's message, edit, reaction, typing and receipt events skip the members blocked either
/// way with them (``MessagingService/audience(of:among:context:)``).
struct MessagingEvents: Sendable {
    let hub: LiveHub
    let conversations: ConversationStore

    /// The commands that publish a `message` event, for the caller's pipeline. `message` is the
    /// Message already encoded (as `messaging.send` answers it): it is spliced in.
    func messageCommands(_ message: RawJSON, to members: [Int64]) -> [[RedisArgument]] {
        hub.publishCommands(to: members, event: Self.event("message", carrying: message))
    }

    /// A `message` event of its own (a group's system message).
    func message(_ message: RawJSON, to members: [Int64]) async throws {
        try await hub.publish(to: members, event: Self.event("message", carrying: message))
    }

    /// An `edited` event: `message` is the Message encoded as every member may see it.
    func edited(_ message: RawJSON, to members: [Int64]) async throws {
        try await hub.publish(to: members, event: Self.event("edited", carrying: message))
    }

    /// `{"type":"<type>","message":<message>}`, the message spliced in as it was encoded.
    private static func event(_ type: StaticString, carrying message: RawJSON) -> RawJSON {
        var event = Array(#"{"type":""#.utf8)
        event.reserveCapacity(event.count + 20 + message.bytes.count)
        event.append(contentsOf: UnsafeBufferPointer(start: type.utf8Start, count: type.utf8CodeUnitCount))
        event.append(contentsOf: Array(#"","message":"#.utf8))
        event.append(contentsOf: message.bytes)
        event.append(UInt8(ascii: "}"))
        return RawJSON(unchecked: event)
    }

    private struct DeletedEvent: Encodable {
        var type = "deleted"
        var conversationId: EntityID
        var messageId: EntityID
        var forEveryone: Bool
    }

    func deleted(_ conversation: Int64, message: Int64, forEveryone: Bool, to members: [Int64]) async throws {
        let event = DeletedEvent(conversationId: EntityID(conversation), messageId: EntityID(message), forEveryone: forEveryone)
        try await hub.publish(to: members, event: RawJSON(encoding: event))
    }

    private struct ReactionEvent: Encodable {
        var type = "reaction"
        var conversationId: EntityID
        var messageId: EntityID
        var userId: EntityID
        var emoji: String?
        var reactions: [Reaction]

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(type, forKey: .type)
            try container.encode(conversationId, forKey: .conversationId)
            try container.encode(messageId, forKey: .messageId)
            try container.encode(userId, forKey: .userId)
            try container.encode(emoji, forKey: .emoji)
            try container.encode(reactions, forKey: .reactions)
        }

        private enum CodingKeys: String, CodingKey {
            case type, conversationId, messageId, userId, emoji, reactions
        }
    }

    /// `user` reacted to `message` with `emoji`, or took their reaction back (nil).
    func reaction(_ message: Message, user: Int64, emoji: String?, to members: [Int64]) async throws {
        let event = ReactionEvent(
            conversationId: message.conversationId, messageId: message.id, userId: EntityID(user), emoji: emoji,
            reactions: message.reactions.map { Reaction(emoji: $0.emoji, count: $0.count, reactedByMe: false) })
        try await hub.publish(to: members, event: RawJSON(encoding: event))
    }

    private struct TypingEvent: Encodable {
        var type = "typing"
        var conversationId: EntityID
        var userId: EntityID
        var typing: Bool
        var expiresAt: Date?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(type, forKey: .type)
            try container.encode(conversationId, forKey: .conversationId)
            try container.encode(userId, forKey: .userId)
            try container.encode(typing, forKey: .typing)
            try container.encode(expiresAt, forKey: .expiresAt)
        }

        private enum CodingKeys: String, CodingKey {
            case type, conversationId, userId, typing, expiresAt
        }
    }

    func typing(_ conversation: Int64, user: Int64, typing: Bool, expiresAt: Date?, to members: [Int64]) async throws {
        let event = TypingEvent(
            conversationId: EntityID(conversation), userId: EntityID(user), typing: typing, expiresAt: expiresAt)
        try await hub.publish(to: members.filter { $0 != user }, event: RawJSON(encoding: event))
    }

    private struct ReadEvent: Encodable {
        var type = "read"
        var conversationId: EntityID
        var userId: EntityID
        var upTo: EntityID
        var readAt: Date
    }

    func read(_ conversation: Int64, user: Int64, upTo: Int64, to members: [Int64]) async throws {
        let event = ReadEvent(conversationId: EntityID(conversation), userId: EntityID(user), upTo: EntityID(upTo), readAt: Date())
        try await hub.publish(to: members, event: RawJSON(encoding: event))
    }

    private struct PresenceEvent: Encodable {
        var type = "presence"
        var presence: Presence

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(type, forKey: .type)
            try container.encode(presence.userId, forKey: .userId)
            try container.encode(presence.online, forKey: .online)
            try container.encode(presence.lastSeen, forKey: .lastSeen)
        }

        private enum CodingKeys: String, CodingKey {
            case type, userId, online, lastSeen
        }
    }

    func presence(_ presence: Presence) async throws {
        let audience = try await conversations.presenceAudience(of: presence.userId.value)
        try await hub.publish(to: audience + [presence.userId.value], event: RawJSON(encoding: PresenceEvent(presence: presence)))
    }

    /// A conversation as its `conversation` events carry it: what every member sees alike.
    struct ConversationState: Encodable {
        var id: EntityID
        var kind: ConversationKind
        var title: String?
        var members: [UserSummary]
        var lastUpdated: Date
        var ownerId: EntityID?
        var adminIds: [EntityID]
        var picture: Media?

        init(_ conversation: Conversation) {
            id = conversation.id
            kind = conversation.kind
            title = conversation.title
            members = conversation.members
            lastUpdated = conversation.lastUpdated
            ownerId = conversation.ownerId
            adminIds = conversation.adminIds
            picture = conversation.picture
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(kind, forKey: .kind)
            try container.encode(title, forKey: .title)
            try container.encode(members, forKey: .members)
            try container.encode(lastUpdated, forKey: .lastUpdated)
            try container.encode(ownerId, forKey: .ownerId)
            try container.encode(adminIds, forKey: .adminIds)
            try container.encode(picture, forKey: .picture)
        }

        private enum CodingKeys: String, CodingKey {
            case id, kind, title, members, lastUpdated, ownerId, adminIds, picture
        }
    }

    private struct ConversationEvent: Encodable {
        var type = "conversation"
        var change: ConversationChange
        var conversation: ConversationState
        var actorId: EntityID
        /// Whom the change concerns, as ``SystemChange/userIds``.
        var userIds: [EntityID]
    }

    func conversation(_ change: ConversationChange, _ conversation: Conversation, actor: Int64, users: [Int64] = [], to recipients: [Int64])
        async throws
    {
        let event = ConversationEvent(
            change: change, conversation: ConversationState(conversation), actorId: EntityID(actor),
            userIds: users.map { EntityID($0) })
        try await hub.publish(to: Array(Set(recipients)), event: RawJSON(encoding: event))
    }
}
