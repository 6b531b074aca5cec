import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import Redis
import ServiceKit

/// The events `messaging.subscribe` delivers, published through the live hub to each recipient's
/// channel (so they reach subscriptions on every instance, in publishing order):
/// - `{type: "message", message}` to every member, the sender's other sessions included;
/// - `{type: "typing", conversationId, userId, typing, expiresAt}` to the other members;
/// - `{type: "read", conversationId, userId, upTo, readAt}` to every member;
/// - `{type: "presence", userId, online, lastSeen}` to everyone sharing a conversation with the user;
/// - `{type: "conversation", change, conversation, actorId, userIds}` to the members before and after.
struct MessagingEvents: Sendable {
    let hub: LiveHub
    let conversations: ConversationStore

    /// The commands that publish a `message` event, for the caller's pipeline. `message` is the
    /// Message already encoded (as `messaging.send` answers it): it is spliced in.
    func messageCommands(_ message: RawJSON, to members: [Int64]) -> [[RedisArgument]] {
        var event = Array(#"{"type":"message","message":"#.utf8)
        event.reserveCapacity(event.count + message.bytes.count + 1)
        event.append(contentsOf: message.bytes)
        event.append(UInt8(ascii: "}"))
        return hub.publishCommands(to: members, event: RawJSON(unchecked: event))
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

    /// What changed in a conversation.
    enum Change: String, Encodable {
        case created
        case membersAdded
        case memberLeft
        case renamed
    }

    /// A conversation as its `conversation` events carry it: what every member sees alike.
    struct ConversationState: Encodable {
        var id: EntityID
        var kind: ConversationKind
        var title: String?
        var members: [UserSummary]
        var lastUpdated: Date

        init(_ conversation: Conversation) {
            id = conversation.id
            kind = conversation.kind
            title = conversation.title
            members = conversation.members
            lastUpdated = conversation.lastUpdated
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(kind, forKey: .kind)
            try container.encode(title, forKey: .title)
            try container.encode(members, forKey: .members)
            try container.encode(lastUpdated, forKey: .lastUpdated)
        }

        private enum CodingKeys: String, CodingKey {
            case id, kind, title, members, lastUpdated
        }
    }

    private struct ConversationEvent: Encodable {
        var type = "conversation"
        var change: Change
        var conversation: ConversationState
        var actorId: EntityID
        /// The members added, or the one who left.
        var userIds: [EntityID]
    }

    func conversation(_ change: Change, _ conversation: Conversation, actor: Int64, users: [Int64] = [], to recipients: [Int64])
        async throws
    {
        let event = ConversationEvent(
            change: change, conversation: ConversationState(conversation), actorId: EntityID(actor),
            userIds: users.map { EntityID($0) })
        try await hub.publish(to: Array(Set(recipients)), event: RawJSON(encoding: event))
    }
}
