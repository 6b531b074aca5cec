import AviaryAPI
import AviaryJSON
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
        let created = try await conversations.createGroup(
            id: id, creator: caller, title: title, members: members, messageID: resources.ids.next())
        let conversation = try await self.conversation(id, viewer: caller, context: context)
        await announce(
            ConversationStore.ChangeRecord(before: members, messages: [created]), .created, conversation, actor: caller,
            users: members, context: context)
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
        return try await groupChange(params.conversationId, .membersAdded, caller: caller, context: context) {
            try await conversations.addMembers(params.conversationId.value, caller: caller, users: others, ids: resources.ids)
        }
    }

    @Sendable func leave(_ params: ConversationParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        await recordCall(caller, context)
        var left = try await groupChange(params.conversationId, .memberLeft, caller: caller, context: context) {
            try await conversations.leave(params.conversationId.value, user: caller, ids: resources.ids)
        }
        // Read after the leave: its last message may be one sent since, which the leaver may not see.
        left.lastMessage = nil
        left.unreadCount = 0
        return left
    }

    @Sendable func rename(_ params: RenameParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        let title = try TextRules.text(params.title, field: "title", allowed: Self.titleLength)
        await recordCall(caller, context)
        return try await groupChange(params.conversationId, .renamed, caller: caller, context: context) {
            try await conversations.rename(params.conversationId.value, caller: caller, title: title, ids: resources.ids)
        }
    }

    @Sendable func removeMember(_ params: MemberParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        await recordCall(caller, context)
        return try await groupChange(params.conversationId, .memberRemoved, caller: caller, context: context) {
            try await conversations.removeMember(params.conversationId.value, caller: caller, user: params.userId.value, ids: resources.ids)
        }
    }

    @Sendable func setRole(_ params: SetRoleParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        guard params.role != .owner else {
            throw RPCError.validation("role must be admin or member: to hand the group over, use messaging.transferOwnership", field: "role")
        }
        await recordCall(caller, context)
        return try await groupChange(params.conversationId, .roleChanged, caller: caller, context: context) {
            try await conversations.setRole(
                params.role, of: params.userId.value, in: params.conversationId.value, caller: caller, ids: resources.ids)
        }
    }

    @Sendable func transferOwnership(_ params: MemberParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        await recordCall(caller, context)
        return try await groupChange(params.conversationId, .ownershipTransferred, caller: caller, context: context) {
            try await conversations.transferOwnership(params.conversationId.value, caller: caller, to: params.userId.value, ids: resources.ids)
        }
    }

    @Sendable func setPicture(_ params: SetPictureParams, _ context: RPCContext) async throws -> Conversation {
        let caller = try context.requireUser()
        await recordCall(caller, context)
        var picture: String?
        if let mediaId = params.mediaId {
            let found = try await resources.peers.media.getMany(
                GetMediaParams(ids: [mediaId], ownerId: EntityID(caller), purpose: .avatar), context: context)
            guard let media = found.first(where: { $0.id == mediaId }) else {
                throw RPCError.validation("mediaId must name a finished upload of yours with purpose avatar", field: "mediaId")
            }
            picture = String(decoding: try WireEncoding.encode(media), as: UTF8.self)
        }
        return try await groupChange(params.conversationId, .pictureChanged, caller: caller, context: context) {
            try await conversations.setPicture(params.conversationId.value, caller: caller, picture: picture, ids: resources.ids)
        }
    }

    /// Makes a change to a group (`make`, refused as ``accepted(_:_:)`` says), then returns the
    /// conversation as the caller sees it now, with every member before or after it told (the
    /// `conversation` event, then the system messages as `message` events). A change that changed
    /// nothing tells no one.
    private func groupChange(
        _ id: EntityID, _ change: ConversationChange, caller: Int64, context: RPCContext,
        _ make: () async throws -> Result<ConversationStore.ChangeRecord, ConversationStore.ChangeRefusal>
    ) async throws -> Conversation {
        let record = try Self.accepted(try await make(), id)
        await resources.replicaReads.recordWrite(to: [Self.historyName(id.value)])
        let conversation = try await self.conversation(id.value, viewer: caller, context: context)
        let users = record.messages.first?.system?.userIds.map(\.value) ?? []
        await announce(record, change, conversation, actor: caller, users: users, context: context)
        return conversation
    }

    private func announce(
        _ record: ConversationStore.ChangeRecord, _ change: ConversationChange, _ conversation: Conversation, actor: Int64,
        users: [Int64], context: RPCContext
    ) async {
        guard !record.messages.isEmpty else { return }
        let audience = Array(Set(record.before + conversation.members.map(\.id.value)))
        await publish(context) {
            try await events.conversation(change, conversation, actor: actor, users: users, to: audience)
            let now = conversation.members.map(\.id.value)
            let messages = try await hydrate(record.messages, markers: try await self.messages.markers(of: conversation.id.value), context: context)
            for message in messages {
                try await events.message(try RawJSON(encoding: message), to: now)
            }
        }
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
        case .failure(.notAllowed(let message)):
            throw RPCError.forbidden(message)
        case .failure(.notAMember):
            throw RPCError.validation("userId must name a current member of the group", field: "userId")
        case .failure(.invalidUser(let message)):
            throw RPCError.validation(message, field: "userId")
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
