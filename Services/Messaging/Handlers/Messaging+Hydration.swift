import AviaryAPI
import AviaryJSON
import Foundation
import Logging
import RPC
import ServiceKit

extension MessagingService {
    /// The conversations of `snapshot` with their members and last messages' senders named by one
    /// `auth.getUsers` call.
    func hydrate(_ snapshot: ConversationSnapshot, context: RPCContext) async throws -> [Conversation] {
        var users: Set<Int64> = []
        for members in snapshot.members.values { for member in members { users.insert(member.userID) } }
        async let fresh = freshMedia(Array(snapshot.lastMessages.values), conversation: nil, context: context)
        let quoted = try await quotedRows(Array(snapshot.lastMessages.values))
        for message in Array(snapshot.lastMessages.values) + quoted.values { users.insert(message.senderID) }
        let summaries = try await directory.summaries(Array(users), context: context)
        let quotes = Self.quotes(quoted, summaries: summaries)
        let media = await fresh
        return snapshot.headers.map { header in
            let markers = snapshot.members[header.id] ?? []
            let last = snapshot.lastMessages[header.id]
            return Conversation(
                id: EntityID(header.id), kind: header.kind == .direct ? .direct : .group, title: header.title,
                members: markers.map { summaries[$0.userID] ?? UserDirectory.placeholder($0.userID) },
                lastMessage: last.map {
                    Self.message(
                        $0, summaries: summaries, markers: markers, media: media, quotes: quotes, viewer: context.principal?.userID)
                },
                lastUpdated: header.updatedAt, unreadCount: header.unreadCount, muted: header.muted,
                ownerId: markers.first { $0.role == .owner }.map { EntityID($0.userID) },
                adminIds: markers.filter { $0.role == .admin }.map { EntityID($0.userID) },
                picture: header.picture.flatMap { try? JSONCoding.decoder().decode(Media.self, from: Data($0.utf8)) })
        }
    }

    /// One conversation as `viewer` sees it.
    func conversation(_ id: Int64, viewer: Int64, context: RPCContext) async throws -> Conversation {
        let snapshot = try await conversations.snapshot(of: [id], viewer: viewer)
        guard let conversation = try await hydrate(snapshot, context: context).first else {
            throw Self.unknownConversation(EntityID(id))
        }
        return conversation
    }

    /// A stored message as `viewer` sees it; `readBy` from the current members' markers.
    /// `media` holds fresh copies (signed URLs expire) of stored media, by id.
    static func message(
        _ row: MessageRow, summaries: [Int64: UserSummary], markers: [MemberMarker], media: [EntityID: Media] = [:],
        quotes: [Int64: QuotedMessage] = [:], viewer: Int64?
    ) -> Message {
        let stored = storedMedia(row)
        return Message(
            id: EntityID(row.id), conversationId: EntityID(row.conversationID),
            sender: summaries[row.senderID] ?? UserDirectory.placeholder(row.senderID), text: row.text,
            media: stored.map { media[$0.id] ?? $0 },
            kind: MessageKind(rawValue: row.kind) ?? .text, createdAt: row.createdAt,
            readBy: markers.filter { $0.readSeq >= row.seq }.map { EntityID($0.userID) },
            editedAt: row.editedAt, deleted: row.deletedAt != nil, reactions: reactions(row, viewer: viewer),
            replyTo: row.replyTo.flatMap { quotes[$0] }, system: row.system)
    }

    /// The messages `rows` reply to, by id, in one query (none without replies).
    func quotedRows(_ rows: [MessageRow]) async throws -> [Int64: MessageRow] {
        let ids = Set(rows.compactMap(\.replyTo))
        guard !ids.isEmpty else { return [:] }
        return Dictionary(try await messages.messages(Array(ids)).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// `rows` as their replies quote them.
    static func quotes(_ rows: [Int64: MessageRow], summaries: [Int64: UserSummary]) -> [Int64: QuotedMessage] {
        rows.mapValues { row in
            QuotedMessage(
                id: EntityID(row.id), sender: summaries[row.senderID] ?? UserDirectory.placeholder(row.senderID), text: row.text,
                kind: MessageKind(rawValue: row.kind) ?? .text, deleted: row.deletedAt != nil)
        }
    }

    /// The emojis of `row`, most used first (then by the emoji, so the order is stable).
    static func reactions(_ row: MessageRow, viewer: Int64?) -> [Reaction] {
        guard !row.reactions.isEmpty else { return [] }
        var counts: [String: Int] = [:]
        for emoji in row.reactions.values { counts[emoji, default: 0] += 1 }
        let mine = viewer.flatMap { row.reactions[String($0)] }
        return counts.map { Reaction(emoji: $0.key, count: $0.value, reactedByMe: $0.key == mine) }
            .sorted { ($0.count, $1.emoji) > ($1.count, $0.emoji) }
    }

    /// Stored messages with their senders named by one `auth.getUsers` call.
    func hydrate(_ rows: [MessageRow], markers: [MemberMarker], context: RPCContext) async throws -> [Message] {
        guard !rows.isEmpty else { return [] }
        async let fresh = freshMedia(rows, conversation: rows[0].conversationID, context: context)
        let quoted = try await quotedRows(rows)
        let summaries = try await directory.summaries((rows + quoted.values).map(\.senderID), context: context)
        let quotes = Self.quotes(quoted, summaries: summaries)
        let media = await fresh
        return rows.map {
            Self.message($0, summaries: summaries, markers: markers, media: media, quotes: quotes, viewer: context.principal?.userID)
        }
    }

    private static func storedMedia(_ row: MessageRow) -> Media? {
        row.media.flatMap { try? JSONCoding.decoder().decode(Media.self, from: Data($0.utf8)) }
    }

    /// The media of `rows` as the media service describes it now (message media URLs are signed
    /// and expire), in one call; when it cannot answer, the stored copies serve.
    private func freshMedia(_ rows: [MessageRow], conversation: Int64?, context: RPCContext) async -> [EntityID: Media] {
        let ids = rows.compactMap { Self.storedMedia($0)?.id }
        guard !ids.isEmpty else { return [:] }
        do {
            let found = try await resources.peers.media.getMany(
                GetMediaParams(ids: ids, conversationId: conversation.map { EntityID($0) }), context: context)
            return Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        } catch {
            context.logger.warning(
                "\(MediaAPI.getMany.name) failed; stored media URLs are sent", metadata: ["error": "\(error)"])
            return [:]
        }
    }
}
