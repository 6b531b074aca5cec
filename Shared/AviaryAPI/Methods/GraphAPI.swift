import AviaryJSON
import RPC

/// social-graph's methods: the follow graph for apps, and the batches other services read.
public enum GraphAPI {
    public static let follow = RPCMethod<UserParams, FollowState>(
        "graph.follow", access: .user,
        summary: """
            Follow userId. Idempotent: following someone already followed succeeds. Following oneself is a \
            validation error; an unknown user is not_found.
            """)

    public static let unfollow = RPCMethod<UserParams, FollowState>(
        "graph.unfollow", access: .user,
        summary: "Stop following userId. Idempotent: unfollowing someone not followed succeeds. An unknown user is not_found.")

    public static let block = RPCMethod<UserParams, BlockState>(
        "graph.block", access: .user,
        summary: """
            Blocks userId. The follows between the two end; from then on neither can follow, reply to, like or \
            directly message the other, neither is notified of the other's mentions, and each one's tweets are \
            left out of the other's user timelines, replies and searches. userId is not told. Idempotent. \
            Blocking oneself is a validation error; an unknown user is not_found.
            """)

    public static let unblock = RPCMethod<UserParams, BlockState>(
        "graph.unblock", access: .user,
        summary: "Lifts the caller's block of userId; the follows it ended stay ended. Idempotent. An unknown user is not_found.")

    public static let blocks = RPCMethod<PageParams, Page<User>>(
        "graph.blocks", access: .user,
        summary: "Page of the users the caller blocked, most recent block first ({items: [User], nextCursor}). Only the caller sees it.")

    public static let blockedWith = RPCMethod<UserParams, [String]>(
        "graph.blockedWith", access: .internal,
        summary: """
            Internal. Every user userId blocked or who blocked userId, as id strings in no particular order: what \
            the other services leave out or refuse between the two (each process keeps them a while, told of \
            changes before graph.block and graph.unblock answer).
            """)

    public static let mute = RPCMethod<MuteParams, MuteState>(
        "graph.mute", access: .user,
        summary: """
            Mutes userId: their tweets leave the caller's home timeline and, unless notifications is false \
            (default true), their actions notify the caller no more. userId is not told, and follows stay. With \
            durationSeconds (1 to 31,536,000) the mute ends by itself then. Muting again replaces both settings. \
            Following a muted user lifts the mute. Muting oneself is a validation error; an unknown user is not_found.
            """)

    public static let unmute = RPCMethod<UserParams, MuteState>(
        "graph.unmute", access: .user,
        summary: "Lifts the caller's mute of userId: their tweets come back to the home timeline if followed. Idempotent.")

    public static let mutes = RPCMethod<PageParams, Page<User>>(
        "graph.mutes", access: .user,
        summary: "Page of the users the caller muted, most recent mute first ({items: [User], nextCursor}). Only the caller sees it.")

    public static let mutedBy = RPCMethod<UserParams, [String]>(
        "graph.mutedBy", access: .internal,
        summary: """
            Internal. Every user userId mutes now, as id strings in no particular order: whose tweets the timelines \
            of everyone's tweets leave out for userId (each process keeps them a while, told of changes before \
            graph.mute and graph.unmute answer, and when a mute's time is up).
            """)

    public static let silencedPairs = RPCMethod<UserPairsParams, [Bool]>(
        "graph.silencedPairs", access: .internal,
        summary: """
            Internal. For each of pairs (at most 1,000 {userId, otherId}), in order: whether otherId's actions \
            notify userId no more (either blocked the other, or userId muted otherId with notifications).
            """)

    public static let followers = RPCMethod<UserPageParams, Page<User>>(
        "graph.followers", access: .anonymous,
        summary: """
            Page of the users who follow userId, most recent follow first. isFollowed and followsYou are relative \
            to the caller when a token is given.
            """)

    public static let following = RPCMethod<UserPageParams, Page<User>>(
        "graph.following", access: .anonymous,
        summary: """
            Page of the users userId follows, most recent follow first. isFollowed and followsYou are relative to \
            the caller when a token is given.
            """)

    public static let relationship = RPCMethod<UserParams, Relationship>(
        "graph.relationship", access: .user,
        summary: """
            The caller's relation to userId: isFollowed (the caller follows them), followsYou (they follow the \
            caller), blocking (the caller blocks them), blockedBy (they block the caller), muting and \
            mutingNotifications (the caller mutes them, and their notifications too).
            """)

    public static let stats = RPCMethod<UserParams, FollowStats>(
        "graph.stats", access: .anonymous, summary: "Follower and following counts of userId. An unknown user is not_found.")

    public static let suggestions = RPCMethod<SuggestionParams, [User]>(
        "graph.suggestions", access: .user,
        summary: """
            Users the caller may want to follow: followed by the people the caller follows, most mutual connections \
            first (default 20, at most 100).
            """)

    public static let followerIds = RPCMethod<IDPageParams, Page<String>>(
        "graph.followerIds", access: .internal,
        summary: """
            Internal. Page of the ids of userId's followers, most recent follow first (limit default 1,000, at most \
            5,000), for fan-out: {items: [id string], nextCursor: string | null}. Followers who muted userId are \
            left out.
            """)

    public static let followingIds = RPCMethod<IDPageParams, Page<String>>(
        "graph.followingIds", access: .internal,
        summary: """
            Internal. Page of the ids userId follows, most recent follow first (limit default 1,000, at most 5,000), \
            for timeline rebuilds: {items: [id string], nextCursor: string | null}. Users userId muted are left out.
            """)

    public static let statsMany = RPCMethod<StatsBatchParams, [UserFollowStats]>(
        "graph.statsMany", access: .internal,
        summary: """
            Internal. Follower and following counts of each of ids (at most 1,000), in the order asked; with \
            viewerId, also viewerId's relation to each (isFollowed, followsYou; both false for viewerId itself), as \
            graph.relationships gives it.
            """)

    public static let relationships = RPCMethod<RelationshipBatchParams, [UserRelationship]>(
        "graph.relationships", access: .internal,
        summary: """
            Internal. viewerId's relation to each of ids (at most 1,000), in the order asked: isFollowed (viewerId \
            follows them), followsYou (they follow viewerId).
            """)

    // Lists: named sets of the users the caller follows, private to the caller, each read as a
    // timeline of its own (`timeline.list`); their types are in ListsAPI.swift. Declared here, in
    // the enum itself: a peer's key path to a static member declared in an extension of it
    // (`peers.graph.listFeed`) crashed in `_swift_getKeyPath` at run time (Swift 6.3.1).

    public static let createList = RPCMethod<NewListParams, UserList>(
        "graph.createList", access: .user,
        summary: """
            Makes a list of the caller's: title (1-100 characters), repliesPolicy (default followed). A user has at \
            most 100 lists. Lists are private: nobody else sees them, or is told they are on one.
            """)

    public static let updateList = RPCMethod<ListUpdateParams, UserList>(
        "graph.updateList", access: .user,
        summary: "Renames the caller's list listId, or changes its repliesPolicy; what is left out stays. not_found for another's list.")

    public static let deleteList = RPCMethod<ListParams, DeleteResult>(
        "graph.deleteList", access: .user,
        summary: "Deletes the caller's list listId and its members. Idempotent for the caller's own: {deleted: false} when it is gone.")

    public static let list = RPCMethod<ListParams, UserList>(
        "graph.list", access: .user, summary: "The caller's list listId; not_found for another's list, or none.")

    public static let lists = RPCMethod<Empty, [UserList]>(
        "graph.lists", access: .user, summary: "Every list of the caller's, oldest first.")

    public static let listsWith = RPCMethod<UserParams, [UserList]>(
        "graph.listsWith", access: .user, summary: "The caller's lists that hold userId, oldest first.")

    public static let addToList = RPCMethod<ListMembersParams, UserList>(
        "graph.addToList", access: .user,
        summary: """
            Adds userIds (1-100) to the caller's list listId; the list as it is then. Only users the caller \
            follows may be added (a validation error names the first who is not), up to 1,000 a list; adding a \
            member again changes nothing. Unfollowing, or a block either way, takes a user off the follower's lists.
            """)

    public static let removeFromList = RPCMethod<ListMembersParams, UserList>(
        "graph.removeFromList", access: .user,
        summary: "Takes userIds (1-100) off the caller's list listId; the list as it is then. Idempotent.")

    public static let listMembers = RPCMethod<ListPageParams, Page<User>>(
        "graph.listMembers", access: .user,
        summary: "Page of the users on the caller's list listId, most recently added first ({items: [User], nextCursor}).")

    public static let listFeed = RPCMethod<ListOwnerParams, ListFeed>(
        "graph.listFeed", access: .internal,
        summary: """
            Internal. What timeline reads of userId's list listId: the ids of its members userId does not mute, \
            and its repliesPolicy; not_found when the list is not userId's.
            """)
}

/// Params naming one other user.
public struct UserParams: Codable, Sendable {
    public var userId: EntityID

    public init(userId: EntityID) {
        self.userId = userId
    }
}

/// Params of `graph.suggestions`.
public struct SuggestionParams: Codable, Sendable {
    public var limit: PageLimit?

    public init(limit: PageLimit? = nil) {
        self.limit = limit
    }
}

/// The result of `graph.follow` and `graph.unfollow`: whether the caller now follows the user.
public struct FollowState: Codable, Sendable {
    public var following: Bool

    public init(following: Bool) {
        self.following = following
    }
}

/// The result of `graph.block` and `graph.unblock`: whether the caller now blocks the user.
public struct BlockState: Codable, Sendable {
    public var blocking: Bool

    public init(blocking: Bool) {
        self.blocking = blocking
    }
}

/// Params of `graph.mute`.
public struct MuteParams: Codable, Sendable {
    /// The seconds a mute with an end may last: up to a year.
    public static let durations = 1...31_536_000

    public var userId: EntityID
    public var notifications: Bool?
    public var durationSeconds: Int?

    public init(userId: EntityID, notifications: Bool? = nil, durationSeconds: Int? = nil) {
        self.userId = userId
        self.notifications = notifications
        self.durationSeconds = durationSeconds
    }
}

/// The result of `graph.mute` and `graph.unmute`: whether the caller now mutes the user.
public struct MuteState: Codable, Sendable {
    public var muting: Bool

    public init(muting: Bool) {
        self.muting = muting
    }
}

/// Params of `graph.silencedPairs`.
public struct UserPairsParams: Codable, Sendable {
    public var pairs: [UserPair]

    public init(pairs: [UserPair]) {
        self.pairs = pairs
    }
}

/// Two users: `userId` and the `otherId` asked about.
public struct UserPair: Codable, Sendable, Hashable {
    public var userId: EntityID
    public var otherId: EntityID

    public init(userId: EntityID, otherId: EntityID) {
        self.userId = userId
        self.otherId = otherId
    }
}

/// The result of `graph.stats`.
public struct FollowStats: Codable, Sendable {
    public var followers: Int64
    public var following: Int64

    public init(followers: Int64, following: Int64) {
        self.followers = followers
        self.following = following
    }
}

/// Params of a page of ids (`graph.followerIds`, `graph.followingIds`).
public struct IDPageParams: Codable, Sendable {
    public var userId: EntityID
    public var limit: IDPageLimit?
    public var cursor: String?

    public init(userId: EntityID, limit: IDPageLimit? = nil, cursor: String? = nil) {
        self.userId = userId
        self.limit = limit
        self.cursor = cursor
    }
}

/// The `limit` of an id page: default 1,000, at most 5,000.
public struct IDPageLimit: Codable, Sendable, JSONSchemaDescribing {
    public static let `default` = 1000
    public static let maximum = 5000
    public let value: Int

    public init(_ value: Int = IDPageLimit.default) {
        self.value = value
    }

    public init(from decoder: any Decoder) throws {
        guard let value = try? decoder.singleValueContainer().decode(Int.self), (1...Self.maximum).contains(value) else {
            let field = decoder.codingPath.fieldName
            throw RPCError.validation("\(field) must be an integer from 1 to \(Self.maximum)", field: field)
        }
        self.value = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    public static var jsonSchema: JSONValue { ["type": "integer", "minimum": 1, "maximum": 5000, "default": 1000] }
}

/// Params of `graph.statsMany`: with `viewerId`, each user's relation to the viewer comes with
/// the counts, so a profile read asks social-graph once, not twice.
public struct StatsBatchParams: Codable, Sendable {
    public var ids: [EntityID]
    public var viewerId: EntityID?

    public init(ids: [EntityID], viewerId: EntityID? = nil) {
        self.ids = ids
        self.viewerId = viewerId
    }
}

/// Params of `graph.relationships`.
public struct RelationshipBatchParams: Codable, Sendable {
    public var viewerId: EntityID
    public var ids: [EntityID]

    public init(viewerId: EntityID, ids: [EntityID]) {
        self.viewerId = viewerId
        self.ids = ids
    }
}

/// One element of `graph.statsMany`; the relation to the viewer only when one was named.
public struct UserFollowStats: Codable, Sendable {
    public var userId: EntityID
    public var followers: Int64
    public var following: Int64
    public var isFollowed: Bool?
    public var followsYou: Bool?

    public init(userId: EntityID, followers: Int64, following: Int64, isFollowed: Bool? = nil, followsYou: Bool? = nil) {
        self.userId = userId
        self.followers = followers
        self.following = following
        self.isFollowed = isFollowed
        self.followsYou = followsYou
    }
}

/// One element of `graph.relationships`: the viewer's relation to `userId`.
public struct UserRelationship: Codable, Sendable {
    public var userId: EntityID
    public var isFollowed: Bool
    public var followsYou: Bool

    public init(userId: EntityID, isFollowed: Bool, followsYou: Bool) {
        self.userId = userId
        self.isFollowed = isFollowed
        self.followsYou = followsYou
    }
}
