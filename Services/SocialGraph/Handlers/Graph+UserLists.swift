import AviaryAPI
import RPC
import ServiceKit

extension SocialGraphService {
    @Sendable func createList(_ params: NewListParams, _ context: RPCContext) async throws -> UserList {
        let caller = try context.requireUser()
        let title = try TextRules.text(params.title, field: "title", allowed: ListLimits.title)
        do {
            return try await lists.create(id: ids.next(), owner: caller, title: title, policy: params.repliesPolicy ?? .followed)
        } catch let refusal as ListStore.Refusal {
            throw Self.error(refusal)
        }
    }

    @Sendable func updateList(_ params: ListUpdateParams, _ context: RPCContext) async throws -> UserList {
        let caller = try context.requireUser()
        let title = try params.title.map { title throws(RPCError) in try TextRules.text(title, field: "title", allowed: ListLimits.title) }
        guard let list = try await lists.update(params.listId.value, owner: caller, title: title, policy: params.repliesPolicy) else {
            throw Self.unknownList(params.listId)
        }
        return list
    }

    @Sendable func deleteList(_ params: ListParams, _ context: RPCContext) async throws -> DeleteResult {
        DeleteResult(deleted: try await lists.delete(params.listId.value, owner: try context.requireUser()))
    }

    @Sendable func userList(_ params: ListParams, _ context: RPCContext) async throws -> UserList {
        guard let list = try await lists.list(params.listId.value, owner: try context.requireUser()) else {
            throw Self.unknownList(params.listId)
        }
        return list
    }

    @Sendable func userLists(_ params: Empty, _ context: RPCContext) async throws -> [UserList] {
        try await lists.lists(of: try context.requireUser())
    }

    @Sendable func listsWith(_ params: UserParams, _ context: RPCContext) async throws -> [UserList] {
        try await lists.lists(of: try context.requireUser(), holding: params.userId.value)
    }

    @Sendable func addToList(_ params: ListMembersParams, _ context: RPCContext) async throws -> UserList {
        let caller = try context.requireUser()
        let members = try Self.listMembers(params.userIds)
        do {
            guard let list = try await lists.add(members, to: params.listId.value, owner: caller) else { throw Self.unknownList(params.listId) }
            return list
        } catch let refusal as ListStore.Refusal {
            throw Self.error(refusal)
        }
    }

    @Sendable func removeFromList(_ params: ListMembersParams, _ context: RPCContext) async throws -> UserList {
        let caller = try context.requireUser()
        guard let list = try await lists.remove(try Self.listMembers(params.userIds), from: params.listId.value, owner: caller) else {
            throw Self.unknownList(params.listId)
        }
        return list
    }

    @Sendable func listMemberPage(_ params: ListPageParams, _ context: RPCContext) async throws -> Page<User> {
        let caller = try context.requireUser()
        let cursor = try FollowCursor.decode(params.cursor)
        guard try await lists.list(params.listId.value, owner: caller) != nil else { throw Self.unknownList(params.listId) }
        let page = try await lists.members(of: params.listId.value, after: cursor, limit: (params.limit ?? PageLimit()).value)
        let users = try await directory.users(page.ids, viewer: caller, context: context)
        return Page(items: users, nextCursor: page.next?.encoded)
    }

    @Sendable func listFeed(_ params: ListOwnerParams, _ context: RPCContext) async throws -> ListFeed {
        guard let feed = try await lists.feed(params.listId.value, owner: params.userId.value) else { throw Self.unknownList(params.listId) }
        return feed
    }

    /// `userIds` as a list change takes them: 1 to 100.
    private static func listMembers(_ userIds: [EntityID]) throws(RPCError) -> [Int64] {
        guard ListLimits.usersPerCall.contains(userIds.count) else {
            throw RPCError.validation(
                "userIds must hold from 1 to \(ListLimits.usersPerCall.upperBound) user ids, got \(userIds.count)", field: "userIds")
        }
        return userIds.map(\.value)
    }

    private static func unknownList(_ id: EntityID) -> RPCError {
        RPCError.notFound("you have no list with the id \(id)")
    }

    private static func error(_ refusal: ListStore.Refusal) -> RPCError {
        switch refusal {
        case .tooManyLists:
            RPCError.validation("you have \(ListLimits.listsPerUser) lists, as many as a user may", field: "title")
        case .full(let current):
            RPCError.validation(
                "a list holds at most \(ListLimits.membersPerList) users; this one holds \(current)", field: "userIds")
        case .notFollowed(let user):
            RPCError.validation("only users you follow can be on your lists; you do not follow \(user)", field: "userIds")
        }
    }
}
