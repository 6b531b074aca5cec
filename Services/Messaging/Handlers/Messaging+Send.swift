import AviaryAPI
import AviaryJSON
import EventStreams
import Foundation
import Logging
import RPC
import ServiceKit

extension MessagingService {
    /// The longest `clientMessageId`.
    static let clientMessageIDLimit = 128

    /// Answers the Message, encoded once for both the answer and the members' live event. A text
    /// message costs one statement (which checks membership) and one Redis round trip (the event,
    /// with the caller's presence).
    @Sendable func send(_ params: SendParams, _ context: RPCContext) async throws -> RawJSON {
        let caller = try context.requireUser()
        let conversation = params.conversationId.value
        let text = try Self.messageText(params)
        let clientMessageID = try params.clientMessageId.map { value throws(RPCError) in
            try TextRules.text(value, field: "clientMessageId", allowed: 1...Self.clientMessageIDLimit)
        }
        // The sender's summary (usually held in memory) is read before the message is stored: once
        // stored, the call must not fail, or a client told "unavailable, safe to retry" would send
        // the message twice.
        async let senderSummary = directory.summaries([caller], context: context)
        // Who is blocked either way with the sender: a direct message to one is refused, and in a
        // group they hear nothing of it live (its history still holds it).
        async let blockedWithCaller = resources.blocked(with: caller, context: context)
        async let directPeer = conversations.directPeer(of: conversation, for: caller)
        var quotes: [Int64: QuotedMessage] = [:]
        if let replyTo = params.replyTo {
            // Read as the caller may see it: a message of another conversation is not theirs to quote.
            guard let quoted = try await messages.message(replyTo.value, member: caller), quoted.conversationID == conversation else {
                throw RPCError.validation("replyTo must name a message of this conversation", field: "replyTo")
            }
            let summaries = try await directory.summaries([quoted.senderID], context: context)
            quotes = Self.quotes([quoted.id: quoted], summaries: summaries)
        }
        var media: Media?
        if let mediaId = params.mediaId {
            // Membership first: a non-member learns nothing, not even whether the media would do.
            guard try await conversations.isMember(conversation, user: caller) else {
                throw Self.unknownConversation(params.conversationId)
            }
            media = try await messageMedia(mediaId, conversation: conversation, sender: caller, context: context)
        }
        let sender = try await senderSummary
        let hidden: Set<Int64>
        if let peer = try await directPeer {
            // A direct message waits for the answer: unknown, it is not sent.
            hidden = try await blockedWithCaller
            if hidden.contains(peer) { throw ServiceResources.blockRefusal(Self.messageAction) }
        } else {
            do {
                hidden = try await blockedWithCaller
            } catch {
                Self.blocksUnknown(error, logger: context.logger)
                hidden = []
            }
        }
        let stored = NewMessageInput(text: text, media: media, clientMessageID: clientMessageID)
        let outcome = try await messages.send(
            MessageStore.NewMessage(
                conversationID: conversation, senderID: caller, text: stored.text, media: try stored.mediaJSON(),
                kind: stored.kind.rawValue, clientMessageID: clientMessageID, replyTo: params.replyTo?.value),
            id: resources.ids.next())
        switch outcome {
        case .notMember:
            throw Self.unknownConversation(params.conversationId)
        case .duplicate(let row):
            await recordCall(caller, context)
            return try RawJSON(encoding: try await hydrate([row], markers: try await messages.markers(of: conversation), context: context)[0])
        case .sent(let row, let everyone):
            let members = hidden.isEmpty ? everyone : everyone.filter { !hidden.contains($0) }
            OutboxRelay.nudge()
            // Before the members hear of it: whoever opens the history then reads the primary.
            await resources.replicaReads.recordWrite(to: [Self.historyName(conversation)])
            let message = try RawJSON(
                encoding: Self.message(
                    row, summaries: sender, markers: [MemberMarker(userID: caller, readSeq: row.seq)], quotes: quotes, viewer: caller))
            await publish(context) {
                try await presence.record(caller, alongside: events.messageCommands(message, to: members))
            }
            return message
        }
    }

    /// The outbox relay's preparation of messaging's events: each `message` event's `recipientIds`
    /// become `offlineRecipientIds`, those without an open subscription at relay time (whom
    /// notifications tells instead), and an event whose recipients all have one is left out: the
    /// subscriptions delivered it, and notifications would only read it to do nothing. One Redis
    /// round trip per batch.
    @Sendable static func nameOfflineRecipients(_ events: [OutboxRelay.Event], presence: PresenceTracker) async throws
        -> [OutboxRelay.Event]
    {
        // Each message event, by its place in the batch; one that already names its offline
        // recipients (stored before recipientIds existed) goes on as it is.
        var messages: [(index: Int, message: MessageSent)] = []
        for (index, event) in events.enumerated() where event.type == MessagingTopic.sent.type {
            let message = try RawJSON(unchecked: Array(event.payload.utf8)).decode(MessageSent.self)
            guard message.offlineRecipientIds == nil else { continue }
            messages.append((index, message))
        }
        guard !messages.isEmpty else { return events }
        let everyone = Set(messages.flatMap { ($0.message.recipientIds ?? []).map(\.value) })
        let subscribed = try await presence.subscribed(among: everyone.sorted())
        var prepared: [OutboxRelay.Event?] = events
        for (index, var message) in messages {
            // No recipientIds: no one else is in the conversation.
            let offline = (message.recipientIds ?? []).filter { !subscribed.contains($0.value) }
            guard !offline.isEmpty else {
                prepared[index] = nil
                continue
            }
            message.recipientIds = nil
            message.offlineRecipientIds = offline
            prepared[index]?.payload = String(decoding: try WireEncoding.encode(message), as: UTF8.self)
        }
        return prepared.compactMap { $0 }
    }

    /// The message's text: trimmed, at most 4,000 characters; nil when only media is sent.
    private static func messageText(_ params: SendParams) throws(RPCError) -> String? {
        let text = params.text.flatMap { $0.trimmingWhitespace().isEmpty ? nil : $0 }
        guard text != nil || params.mediaId != nil else {
            throw RPCError.validation("text must not be empty unless mediaId is given", field: "text")
        }
        return try text.map { value throws(RPCError) in
            try TextRules.text(value, field: "text", allowed: 1...TextRules.messageLimit)
        }
    }

    /// The media `id` if the media service vouches that `sender` uploaded it for `conversation`.
    private func messageMedia(_ id: EntityID, conversation: Int64, sender: Int64, context: RPCContext) async throws -> Media {
        let found = try await resources.peers.media.getMany(
            GetMediaParams(ids: [id], ownerId: EntityID(sender), purpose: .message, conversationId: EntityID(conversation)),
            context: context)
        guard let media = found.first(where: { $0.id == id }) else {
            throw RPCError.validation(
                "mediaId must name a finished upload of yours made for this conversation (purpose message)", field: "mediaId")
        }
        return media
    }

    /// Refuses a message (or an edit, or a reaction) in a direct conversation whose two members
    /// blocked one another.
    func refuseBlockedDirect(_ conversation: Int64, sender: Int64, context: RPCContext) async throws {
        guard let peer = try await conversations.directPeer(of: conversation, for: sender) else { return }
        try await resources.refuseIfBlocked(sender, peer, Self.messageAction, context: context)
    }

    /// What a block refuses in a direct conversation: "you cannot message this user".
    static let messageAction = "message this user"

    /// `members` but those blocked either way with `actor`: who hears live of what `actor` does in a
    /// conversation (in a group, neither of two who blocked one another hears the other's messages,
    /// edits, reactions, typing or receipts). While social-graph cannot say, every member hears it:
    /// the history shows it to them all anyway.
    func audience(of actor: Int64, among members: [Int64], context: RPCContext?) async -> [Int64] {
        do {
            let hidden = try await resources.blocked(among: members, with: actor, context: context)
            return hidden.isEmpty ? members : members.filter { !hidden.contains($0) }
        } catch {
            Self.blocksUnknown(error, logger: context?.logger ?? resources.logger)
            return members
        }
    }

    /// Logs that social-graph could not say who is blocked, so a group's live event goes to all.
    private static func blocksUnknown(_ error: any Error, logger: Logger) {
        logger.warning("blocks unknown: a group's live event goes to every member", metadata: ["error": "\(error)"])
    }
}

private struct NewMessageInput {
    var text: String?
    var media: Media?
    var clientMessageID: String?

    var kind: MessageKind {
        guard let media else { return .text }
        return media.contentType.hasPrefix("video/") ? .video : .image
    }

    func mediaJSON() throws -> String? {
        try media.map { String(decoding: try WireEncoding.encode($0), as: UTF8.self) }
    }
}
