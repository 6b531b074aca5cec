import AviaryAPI
import Logging
import RPC
import ServiceKit

extension MessagingService {
    /// Titles of groups: 1 to 100 characters.
    static let titleLength = 1...100

    @Sendable func openDirect(_ params: OpenDirectParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        let other = params.userId.value
        guard other != caller else {
            throw RPCError.validation("userId must be another user: a direct conversation is between two people", field: "userId")
        }
        await recordCall(caller, context)
        guard try await directory.summaries([other, caller], context: context)[other] != nil else {
            throw RPCError.notFound("no user has the id \(params.userId)")
        }
        try await resources.refuseIfBlocked(caller, other, "message this user", context: context)
        let opened = try await conversations.openDirect(caller, other, creator: caller, id: resources.ids.next())
        let conversation = try await self.conversation(opened.id, viewer: caller, context: context)
        if opened.created {
            await publish(context) {
                try await events.conversation(.created, conversation, actor: caller, users: [caller, other], to: [caller, other])
            }
        }
        return conversation
    }

    @Sendable func createGroup(_ params: CreateGroupParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        let title = try TextRules.text(params.title, field: "title", allowed: Self.titleLength)
        let others = try Self.others(params.memberIds, caller: caller, field: "memberIds")
        guard !others.isEmpty else {
            throw RPCError.validation("memberIds must name at least one other user", field: "memberIds")
        }
        guard others.count + 1 <= ConversationStore.memberLimit else {
            throw RPCError.validation(
                "memberIds must name at most \(ConversationStore.memberLimit - 1) other users (a group has at most \(ConversationStore.memberLimit) members), got \(others.count)",
                field: "memberIds")
        }
        await recordCall(caller, context)
        try await requireUsers(others, caller: caller, context: context)
        let id = resources.ids.next()
        let members = [caller] + others
        try await conversations.createGroup(id: id, creator: caller, title: title, members: members)
        let conversation = try await self.conversation(id, viewer: caller, context: context)
        await publish(context) { try await events.conversation(.created, conversation, actor: caller, users: members, to: members) }
        return conversation
    }

    @Sendable func addMembers(_ params: AddMembersParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        let others = try Self.others(params.memberIds, caller: caller, field: "memberIds")
        guard !others.isEmpty else {
            throw RPCError.validation("memberIds must name at least one other user", field: "memberIds")
        }
        await recordCall(caller, context)
        guard let members = try await conversations.members(of: params.conversationId.value, ifIncluding: caller) else {
            throw Self.unknownConversation(params.conversationId)
        }
        // The members are named in the same call, for the result's hydration.
        try await requireUsers(others, caller: caller, alongside: members, context: context)
        let result = try await conversations.addMembers(
            params.conversationId.value, caller: caller, users: others, activityID: resources.ids.next())
        let added = try Self.accepted(result, params.conversationId)
        let conversation = try await self.conversation(params.conversationId.value, viewer: caller, context: context)
        if !added.isEmpty {
            await publish(context) {
                try await events.conversation(
                    .membersAdded, conversation, actor: caller, users: added, to: conversation.members.map(\.id.value))
            }
        }
        return conversation
    }

    @Sendable func leave(_ params: ConversationParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        await recordCall(caller, context)
        let before = try Self.accepted(
            try await conversations.leave(params.conversationId.value, user: caller, activityID: resources.ids.next()),
            params.conversationId)
        let conversation = try await self.conversation(params.conversationId.value, viewer: caller, context: context)
        await publish(context) { try await events.conversation(.memberLeft, conversation, actor: caller, users: [caller], to: before) }
        // Read after the leave: its last message may be one sent since, which the leaver may not see.
        var left = conversation
        left.lastMessage = nil
        left.unreadCount = 0
        return left
    }

    @Sendable func rename(_ params: RenameParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        let title = try TextRules.text(params.title, field: "title", allowed: Self.titleLength)
        await recordCall(caller, context)
        try Self.accepted(
            try await conversations.rename(params.conversationId.value, caller: caller, title: title, activityID: resources.ids.next()),
            params.conversationId)
        let conversation = try await self.conversation(params.conversationId.value, viewer: caller, context: context)
        await publish(context) {
            try await events.conversation(.renamed, conversation, actor: caller, to: conversation.members.map(\.id.value))
        }
        return conversation
    }

    @Sendable func mute(_ params: MuteConversationParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        await recordCall(caller, context)
        guard try await conversations.setMuted(params.muted, conversation: params.conversationId.value, user: caller) else {
            throw Self.unknownConversation(params.conversationId)
        }
        return try await conversation(params.conversationId.value, viewer: caller, context: context)
    }

    @Sendable func conversationPage(_ params: PageParams, _ context: RPCContext) async throws -> Page<Conversation> {
        let caller = try context.requireUser()
        let cursor = try KeysetCursor.decode(params.cursor)
        if let cursor, cursor.key <= 0 || cursor.id <= 0 { throw KeysetCursor.refusal() }
        await recordCall(caller, context)
        let (snapshot, next) = try await conversations.page(of: caller, after: cursor, limit: (params.limit ?? PageLimit()).value)
        return Page(items: try await hydrate(snapshot, context: context), nextCursor: next?.encoded)
    }

    /// The distinct other users of `ids`, in the order given.
    static func others(_ ids: [EntityID], caller: Int64, field: String) throws(RPCError) -> [Int64] {
        guard ids.count <= 1000 else {
            throw RPCError.validation("\(field) must list at most 1,000 ids, got \(ids.count)", field: field)
        }
        var seen: Set<Int64> = [caller]
        return ids.map(\.value).filter { seen.insert($0).inserted }
    }

    /// Throws `not_found` naming the first of `users` the accounts service does not know.
    private func requireUsers(_ users: [Int64], caller: Int64, alongside others: [Int64] = [], context: RPCContext) async throws {
        let known = try await directory.summaries(users + [caller] + others, context: context)
        if let unknown = users.first(where: { known[$0] == nil }) {
            throw RPCError.notFound("no user has the id \(unknown)")
        }
    }

    /// The value of an accepted change, or the refusal as an error.
    private static func accepted<Value>(_ result: Result<Value, ConversationStore.ChangeRefusal>, _ id: EntityID)
        throws(RPCError) -> Value
    {
        switch result {
        case .success(let value):
            return value
        case .failure(.notMember):
            throw unknownConversation(id)
        case .failure(.direct):
            throw RPCError.validation(
                "conversationId names a direct conversation, which always has its two members and no title", field: "conversationId")
        case .failure(.full(let current)):
            throw RPCError.validation(
                "memberIds would take the group past \(ConversationStore.memberLimit) members (it has \(current))", field: "memberIds")
        }
    }

    /// Runs a publication after a committed change: the change stands even when Redis does not answer.
    func publish(_ context: RPCContext, _ body: () async throws -> Void) async {
        do {
            try await body()
        } catch {
            context.logger.warning("could not publish a live event", metadata: ["error": "\(error)"])
        }
    }
}
