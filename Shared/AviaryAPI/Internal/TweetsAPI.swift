import RPC

/// tweets' methods that other services call.
public enum TweetsAPI {
    public static let getMany = RPCMethod<GetTweetsParams, [Tweet]>(
        "tweets.getMany", access: .internal,
        summary: """
            Internal. The Tweets of ids (at most 1,000), in the order asked, relative to viewerId; unknown ids are \
            left out, deleted tweets are marked deleted without their text, or left out when omitDeleted is true.
            """)

    public static let recentIds = RPCMethod<RecentIDsParams, [RecentTweet]>(
        "tweets.recentIds", access: .internal,
        summary: """
            Internal. The newest live tweets (replies included) of authorIds (at most 5,000), newest first across \
            them, at most limit (1-800), older than the tweet id before when given: [{id, authorId}].
            """)

    public static let statsMany = RPCMethod<TweetStatsParams, [UserTweetStats]>(
        "tweets.statsMany", access: .internal,
        summary: """
            Internal. How many live tweets each of ids (at most 1,000 user ids) has, in the order asked: [{userId, \
            tweets}]. Exact up to 1,000; a larger count may lag the latest posts by up to 10 seconds.
            """)
}

/// Params of `tweets.getMany`.
public struct GetTweetsParams: Codable, Sendable {
    public var ids: [EntityID]
    public var viewerId: EntityID?
    public var omitDeleted: Bool?

    public init(ids: [EntityID], viewerId: EntityID? = nil, omitDeleted: Bool? = nil) {
        self.ids = ids
        self.viewerId = viewerId
        self.omitDeleted = omitDeleted
    }
}

/// Params of `tweets.recentIds`.
public struct RecentIDsParams: Codable, Sendable {
    public var authorIds: [EntityID]
    public var limit: Int
    public var before: EntityID?

    public init(authorIds: [EntityID], limit: Int, before: EntityID? = nil) {
        self.authorIds = authorIds
        self.limit = limit
        self.before = before
    }
}

/// Params of `tweets.statsMany`.
public struct TweetStatsParams: Codable, Sendable {
    public var ids: [EntityID]

    public init(ids: [EntityID]) {
        self.ids = ids
    }
}

/// One element of `tweets.recentIds`.
public struct RecentTweet: Codable, Sendable {
    public var id: EntityID
    public var authorId: EntityID

    public init(id: EntityID, authorId: EntityID) {
        self.id = id
        self.authorId = authorId
    }
}

/// One element of `tweets.statsMany`.
public struct UserTweetStats: Codable, Sendable {
    public var userId: EntityID
    public var tweets: Int64

    public init(userId: EntityID, tweets: Int64) {
        self.userId = userId
        self.tweets = tweets
    }
}
