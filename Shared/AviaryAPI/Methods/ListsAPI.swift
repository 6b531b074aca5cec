import Foundation
import RPC

/// Which replies a list's timeline shows: replies to anyone the owner follows (`followed`), to the
/// list's members (`list`), or none (`none`). Replies to oneself (threads) show unless `none`.
public enum ListRepliesPolicy: String, Codable, Sendable, Hashable, JSONSchemaEnum {
    case followed
    case list
    case none
}

/// A list of the caller's: its title, which replies it shows, and how many users are on it.
public struct UserList: Codable, Sendable, Hashable {
    public var id: EntityID
    public var title: String
    public var repliesPolicy: ListRepliesPolicy
    public var members: Int
    public var createdAt: Date

    public init(id: EntityID, title: String, repliesPolicy: ListRepliesPolicy, members: Int, createdAt: Date) {
        self.id = id
        self.title = title
        self.repliesPolicy = repliesPolicy
        self.members = members
        self.createdAt = createdAt
    }
}

/// The limits of lists, where validation and the store both read them.
public enum ListLimits {
    public static let title = 1...100
    public static let listsPerUser = 100
    public static let membersPerList = 1000
    public static let usersPerCall = 1...100
}

/// Params of `graph.createList`.
public struct NewListParams: Codable, Sendable {
    public var title: String
    public var repliesPolicy: ListRepliesPolicy?

    public init(title: String, repliesPolicy: ListRepliesPolicy? = nil) {
        self.title = title
        self.repliesPolicy = repliesPolicy
    }
}

/// Params of `graph.updateList`: what is given changes.
public struct ListUpdateParams: Codable, Sendable {
    public var listId: EntityID
    public var title: String?
    public var repliesPolicy: ListRepliesPolicy?

    public init(listId: EntityID, title: String? = nil, repliesPolicy: ListRepliesPolicy? = nil) {
        self.listId = listId
        self.title = title
        self.repliesPolicy = repliesPolicy
    }
}

/// Params naming one of the caller's lists.
public struct ListParams: Codable, Sendable {
    public var listId: EntityID

    public init(listId: EntityID) {
        self.listId = listId
    }
}

/// Params of `graph.addToList` and `graph.removeFromList`.
public struct ListMembersParams: Codable, Sendable {
    public var listId: EntityID
    public var userIds: [EntityID]

    public init(listId: EntityID, userIds: [EntityID]) {
        self.listId = listId
        self.userIds = userIds
    }
}

/// Params of a page of a list (`graph.listMembers`, `timeline.list`).
public struct ListPageParams: Codable, Sendable {
    public var listId: EntityID
    public var limit: PageLimit?
    public var cursor: String?

    public init(listId: EntityID, limit: PageLimit? = nil, cursor: String? = nil) {
        self.listId = listId
        self.limit = limit
        self.cursor = cursor
    }
}

/// Params of `graph.listFeed`: a list, and the user it must belong to.
public struct ListOwnerParams: Codable, Sendable {
    public var listId: EntityID
    public var userId: EntityID

    public init(listId: EntityID, userId: EntityID) {
        self.listId = listId
        self.userId = userId
    }
}

/// The result of `graph.listFeed`.
public struct ListFeed: Codable, Sendable {
    public var memberIds: [EntityID]
    public var repliesPolicy: ListRepliesPolicy

    public init(memberIds: [EntityID], repliesPolicy: ListRepliesPolicy) {
        self.memberIds = memberIds
        self.repliesPolicy = repliesPolicy
    }
}
