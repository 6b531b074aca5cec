import AviaryAPI

/// The result of `tweets.delete`.
struct DeleteResult: Codable, Sendable {
    var deleted: Bool
}

/// One element of `tweets.recentIds`.
struct RecentTweet: Codable, Sendable {
    var id: EntityID
    var authorId: EntityID
}

/// One element of `tweets.statsMany`.
struct UserTweetStats: Codable, Sendable {
    var userId: EntityID
    var tweets: Int64
}
