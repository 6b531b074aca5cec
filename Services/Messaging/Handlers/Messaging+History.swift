import AviaryAPI
import RPC
import ServiceKit

extension MessagingService {
    @Sendable func history(_ params: HistoryParams, _ context: RPCContext) async throws -> Page<Message> {
        let caller = try context.requireUser()
        let order = params.order ?? .newest
        let position = try Self.historyPosition(params.cursor, order: order)
        let conversation = params.conversationId.value
        let limit = (params.limit ?? PageLimit()).value
        // The page is read alongside the membership check and thrown away when it fails.
        let database = await resources.replicaReads.client(reading: Self.historyName(conversation))
        async let page = messages.history(
            conversation, viewer: caller, order: order, after: position, limit: limit, using: database)
        let markers = try await messages.markers(of: conversation)
        guard markers.contains(where: { $0.userID == caller }) else {
            _ = try? await page
            throw Self.unknownConversation(params.conversationId)
        }
        await recordCall(caller, context)
        let (rows, more) = try await page
        let next = more ? rows.last.map { KeysetCursor(key: $0.seq, id: Self.cursorTag(order)).encoded } : nil
        return Page(items: try await hydrate(rows, markers: markers, context: context), nextCursor: next)
    }

    /// What a read of a conversation's history names for ``ReplicaReads``: `conversation:<id>`.
    static func historyName(_ conversation: Int64) -> String { "conversation:\(conversation)" }

    /// History cursors hold the last message's place (`seq`) and the order they were made for.
    private static func cursorTag(_ order: HistoryOrder) -> Int64 { order == .newest ? 1 : 2 }

    private static func historyPosition(_ cursor: String?, order: HistoryOrder) throws(RPCError) -> Int64? {
        guard let cursor = try KeysetCursor.decode(cursor) else { return nil }
        guard cursor.id == cursorTag(order), cursor.key >= 0 else {
            throw RPCError.validation("cursor is not a cursor this service returned for order \(order.rawValue)", field: "cursor")
        }
        return cursor.key
    }

    @Sendable func markRead(_ params: MarkReadParams, _ context: RPCContext) async throws -> UnreadState {
        let caller = try context.requireUser()
        let conversation = params.conversationId.value
        switch try await messages.markRead(conversation, user: caller, upTo: params.upTo.value) {
        case .notMember:
            throw Self.unknownConversation(params.conversationId)
        case .unknownMessage:
            throw RPCError.notFound("no message of this conversation has the id \(params.upTo)")
        case .marked(let unread, let moved, _):
            await recordCall(caller, context)
            if moved {
                await publish(context) {
                    let members = try await messages.markers(of: conversation).map(\.userID)
                    try await events.read(
                        conversation, user: caller, upTo: params.upTo.value,
                        to: await audience(of: caller, among: members, context: context))
                }
            }
            return UnreadState(unreadCount: unread)
        }
    }
}
