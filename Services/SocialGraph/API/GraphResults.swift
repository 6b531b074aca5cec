import AviaryAPI

/// The result of `graph.follow` and `graph.unfollow`: whether the caller now follows the user.
struct FollowState: Codable, Sendable {
    var following: Bool
}

/// The result of `graph.stats`.
struct FollowStats: Codable, Sendable {
    var followers: Int64
    var following: Int64
}

/// One element of `graph.statsMany`; the relation to the viewer only when one was named.
struct UserFollowStats: Codable, Sendable {
    var userId: EntityID
    var followers: Int64
    var following: Int64
    var isFollowed: Bool?
    var followsYou: Bool?
}

/// One element of `graph.relationships`: the viewer's relation to `userId`.
struct UserRelationship: Codable, Sendable {
    var userId: EntityID
    var isFollowed: Bool
    var followsYou: Bool
}
