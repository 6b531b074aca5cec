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
