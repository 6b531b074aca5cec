import AviaryAPI
import AviaryJSON
import Foundation
import Logging
import RPC
import ServiceKit

/// What happens to a message after it is sent: edits, deletes and reactions.
extension MessagingService {
    @Sendable func edit(_ params: EditMessageParams, _ context: RPCContext) async throws -> Message {
        let caller = try context.requireUser()
        let row = try await visibleMessage(params.messageId, to: caller)
        guard row.senderID == caller else { throw RPCError.forbidden("only its sender may edit a message") }
        guard row.deletedAt == nil else { throw Self.deletedMessage }
        let text: String? =
            params.text.trimmingWhitespace().isEmpty && row.media != nil
            ? nil : try TextRules.text(params.text, field: "text", allowed: 1...TextRules.messageLimit)
        let sentAfter = Date() - TimeInterval(MessagingAPI.editWindow.components.seconds)
        guard row.createdAt > sentAfter else {
            throw RPCError.forbidden("a message can be edited only within 15 minutes of sending it")
        }
        try await refuseBlockedDirect(row.conversationID, sender: caller, context: context)
        guard let edited = try await messages.edit(row.id, sender: caller, text: text, sentAfter: sentAfter) else {
            throw RPCError.conflict("the message was deleted, or its 15 minutes ran out, meanwhile", field: "messageId")
        }
        let (message, members) = try await changed(edited, context: context)
        await publish(context) {
            try await events.edited(
                try RawJSON(encoding: Self.everyones(message)), to: await audience(of: caller, among: members, context: context))
        }
        return message
    }

    @Sendable func deleteMessage(_ params: DeleteMessageParams, _ context: RPCContext) async throws -> Empty {
        let caller = try context.requireUser()
        let row = try await visibleMessage(params.messageId, to: caller)
        if params.forEveryone == true {
            guard row.senderID == caller else { throw RPCError.forbidden("only its sender may delete a message for everyone") }
            if try await messages.deleteForEveryone(row.id, sender: caller) {
                await resources.replicaReads.recordWrite(to: [Self.historyName(row.conversationID)])
                if let media = row.media.flatMap({ try? WireDecoding.decode(Media.self, from: Data($0.utf8)) }) {
                    // Its file goes too; a failure leaves it behind (logged), never the delete undone.
                    do {
                        _ = try await resources.peers.media.discard(DiscardMediaParams(ownerId: EntityID(caller), mediaIds: [media.id]), context: context)
                    } catch {
                        context.logger.warning("the deleted message's media could not be discarded", metadata: ["error": "\(error)"])
                    }
                }
                await publish(context) {
                    let members = try await messages.markers(of: row.conversationID).map(\.userID)
                    try await events.deleted(row.conversationID, message: row.id, forEveryone: true, to: members)
                }
            }
        } else {
            try await messages.hide(row.id, for: caller)
            await resources.replicaReads.recordWrite(to: [Self.historyName(row.conversationID)])
            await publish(context) { try await events.deleted(row.conversationID, message: row.id, forEveryone: false, to: [caller]) }
        }
        return Empty()
    }

    @Sendable func react(_ params: ReactParams, _ context: RPCContext) async throws -> Message {
        let caller = try context.requireUser()
        let emoji = try Self.emoji(params.emoji)
        let row = try await visibleMessage(params.messageId, to: caller)
        guard row.deletedAt == nil else { throw Self.deletedMessage }
        try await refuseBlockedDirect(row.conversationID, sender: caller, context: context)
        guard let updated = try await messages.react(row.id, user: caller, emoji: emoji) else { throw Self.deletedMessage }
        let (message, members) = try await changed(updated, context: context)
        let now = updated.reactions[String(caller)]
        await publish(context) {
            try await events.reaction(message, user: caller, emoji: now, to: await audience(of: caller, among: members, context: context))
        }
        return message
    }

    /// The message `id` if `user` is a member of its conversation; `not_found` otherwise, whether
    /// or not it exists.
    private func visibleMessage(_ id: EntityID, to user: Int64) async throws -> MessageRow {
        guard let row = try await messages.message(id.value, member: user) else {
            throw RPCError.notFound("no message has the id \(id)")
        }
        return row
    }

    /// After a change to `row`: the history is read from the primary for a while, and the message
    /// as the caller sees it, with the members who hear of it.
    private func changed(_ row: MessageRow, context: RPCContext) async throws -> (Message, [Int64]) {
        await resources.replicaReads.recordWrite(to: [Self.historyName(row.conversationID)])
        let markers = try await messages.markers(of: row.conversationID)
        return (try await hydrate([row], markers: markers, context: context)[0], markers.map(\.userID))
    }

    /// `message` as its events carry it to every member: nobody's own reaction marked.
    private static func everyones(_ message: Message) -> Message {
        var shared = message
        shared.reactions = message.reactions.map { Reaction(emoji: $0.emoji, count: $0.count, reactedByMe: false) }
        return shared
    }

    private static let deletedMessage = RPCError.conflict("the message was deleted", field: "messageId")

    /// One emoji: a single character whose first scalar is an emoji beyond ASCII (digits, `#` and
    /// `*` are emoji only as keycaps), with at most 16 scalars (flags, skin tones, families).
    static func emoji(_ value: String) throws(RPCError) -> String {
        let emoji = value.trimmingWhitespace()
        guard emoji.count == 1, emoji.unicodeScalars.count <= 16, let first = emoji.unicodeScalars.first,
            first.value > 0x7F, first.properties.isEmoji
        else { throw RPCError.validation("emoji must be one emoji", field: "emoji") }
        return emoji
    }
}
