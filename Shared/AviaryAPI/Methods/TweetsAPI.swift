import RPC

/// tweets' methods: posting, reading and liking tweets for apps, and the batches other services read.
public enum TweetsAPI {
    public static let create = RPCMethod<CreateTweetParams, Tweet>(
        "tweets.create", access: .user, summary: createSummary(maxLength: TextRules.tweetLimit))

    /// `tweets.create`'s summary where tweets may hold `maxLength` characters
    /// (`AVIARY_TWEETS_MAX_LENGTH`).
    public static func createSummary(maxLength: Int) -> String {
        """
        Posts a tweet: text of 1 to \(maxLength) characters (Unicode scalars after trimming white space; each \
        http:// or https:// link counts as \(TextRules.linkWeight)), replyTo (a tweet \
        id to reply to; not_found when it does not exist or was deleted), mediaIds (at most 4 of the caller's \
        finished tweet uploads), quoteOf (a tweet id to quote, shown in the Tweet's quote; a repost's id quotes its \
        original; not_found when it does not exist or was deleted, forbidden across a block) and idempotencyKey (at most 100 characters: a retried create with the same key \
        returns the first tweet instead of posting a second). @usernames of existing users become mentions and \
        #words hashtags. Returns the Tweet.
        """
    }

    public static let get = RPCMethod<TweetParams, Tweet>(
        "tweets.get", access: .anonymous,
        summary: "One Tweet by tweetId; a deleted one comes back with deleted: true and no text. likedByMe is relative to the caller.")

    public static let delete = RPCMethod<TweetParams, DeleteResult>(
        "tweets.delete", access: .user,
        summary: """
            Deletes the caller's tweet tweetId (forbidden for anyone else's); it leaves every timeline. Deleting it \
            again succeeds.
            """)

    public static let like = RPCMethod<TweetParams, LikeState>(
        "tweets.like", access: .user,
        summary: "Likes tweetId as the caller. Idempotent. Returns {likes, likedByMe}; not_found for a deleted or unknown tweet.")

    public static let unlike = RPCMethod<TweetParams, LikeState>(
        "tweets.unlike", access: .user,
        summary: """
            Takes back the caller's like of tweetId. Idempotent. Returns {likes, likedByMe}; not_found for a deleted \
            or unknown tweet.
            """)

    public static let repost = RPCMethod<TweetParams, RepostState>(
        "tweets.repost", access: .user,
        summary: """
            Reposts tweetId (a repost's id reposts its original) to the caller's followers, who see the original \
            with repostedBy, once however many of those they follow repost it. Idempotent. Returns {reposts, \
            repostedByMe, repostId} (tweets.get of repostId shows the entry); not_found for a deleted or unknown \
            tweet, forbidden across a block.
            """)

    public static let unrepost = RPCMethod<TweetParams, RepostState>(
        "tweets.unrepost", access: .user,
        summary: """
            Takes back the caller's repost of tweetId (the original's id or the repost's): it leaves every \
            timeline. Idempotent. Returns {reposts, repostedByMe, repostId: null}; not_found for an unknown tweet.
            """)

    public static let reposters = RPCMethod<RepliesParams, Page<UserSummary>>(
        "tweets.reposters", access: .anonymous,
        summary: """
            Page of the users who repost tweetId ({items: [UserSummary], nextCursor}), most recent repost first; \
            not_found for an unknown or deleted tweet.
            """)

    public static let replies = RPCMethod<RepliesParams, Page<Tweet>>(
        "tweets.replies", access: .anonymous,
        summary: "Page of the replies to tweetId ({items: [Tweet], nextCursor}), oldest first; not_found for an unknown tweet.")

    public static let likers = RPCMethod<RepliesParams, Page<UserSummary>>(
        "tweets.likers", access: .anonymous,
        summary: """
            Page of the users who like tweetId ({items: [UserSummary], nextCursor}), by user id, highest first; \
            not_found for an unknown or deleted tweet.
            """)

    public static let byUser = RPCMethod<ByUserParams, Page<Tweet>>(
        "tweets.byUser", access: .anonymous,
        summary: """
            Page of userId's tweets ({items: [Tweet], nextCursor}), newest first; replies too when includeReplies is \
            true (default false).
            """)

    public static let likedBy = RPCMethod<UserPageParams, Page<Tweet>>(
        "tweets.likedBy", access: .anonymous,
        summary: "Page of the tweets userId liked ({items: [Tweet], nextCursor}), most recent like first.")

    public static let search = RPCMethod<SearchParams, Page<Tweet>>(
        "tweets.search", access: .anonymous,
        summary: """
            Page of tweets ({items: [Tweet], nextCursor}), newest first, holding every word of query and every \
            #hashtag in it (query: 1-100 characters, at least one word or hashtag).
            """)

    public static let byHashtag = RPCMethod<HashtagPageParams, Page<Tweet>>(
        "tweets.byHashtag", access: .anonymous,
        summary: """
            Page of the tweets holding hashtag ({items: [Tweet], nextCursor}), newest first: the hashtag's page. \
            hashtag: 1-100 letters, digits or underscores, with or without its #, any case. Tweets of users the caller \
            blocked, who blocked them or whom they mute are left out.
            """)

    public static let latest = RPCMethod<LatestParams, Page<Tweet>>(
        "tweets.latest", access: .anonymous,
        summary: """
            Page of the network's latest tweets ({items: [Tweet], nextCursor}), newest first: the public timeline. \
            Reposts are left out, and replies but those to their own author (threads); mediaOnly (default false) \
            keeps the tweets with media. Tweets of users blocking the caller or blocked by them, or muted by \
            them, are left out.
            """)

    public static let trending = RPCMethod<TrendingParams, [TrendingHashtag]>(
        "tweets.trending", access: .anonymous,
        summary: """
            The most used hashtags of the last hour, most used first: [{hashtag, uses}] (limit default 20, at most \
            100), at most a second old. Counted as posts arrive; a deleted tweet's hashtags count until their minute \
            leaves the hour.
            """)

    public static let bookmark = RPCMethod<TweetParams, BookmarkState>(
        "tweets.bookmark", access: .user,
        summary: """
            Bookmarks tweetId for the caller alone (nobody is told). Idempotent. Returns {bookmarked}; not_found \
            for a deleted or unknown tweet.
            """)

    public static let unbookmark = RPCMethod<TweetParams, BookmarkState>(
        "tweets.unbookmark", access: .user,
        summary: "Takes tweetId out of the caller's bookmarks. Idempotent. Returns {bookmarked}.")

    public static let bookmarks = RPCMethod<PageParams, Page<Tweet>>(
        "tweets.bookmarks", access: .user,
        summary: "Page of the caller's bookmarked tweets ({items: [Tweet], nextCursor}), most recent bookmark first. Private.")

    public static let pin = RPCMethod<TweetParams, PinState>(
        "tweets.pin", access: .user,
        summary: """
            Pins one of the caller's tweets (tweetId) on their profile, in place of the one pinned before. Returns \
            {pinnedTweetId}; not_found for a deleted or unknown tweet, forbidden for someone else's.
            """)

    public static let unpin = RPCMethod<Empty, PinState>(
        "tweets.unpin", access: .user,
        summary: "Takes the caller's pinned tweet off their profile. Idempotent. Returns {pinnedTweetId: null}.")

    public static let pinned = RPCMethod<UserParams, PinnedTweet>(
        "tweets.pinned", access: .anonymous,
        summary: """
            The tweet userId pinned on their profile: {tweet}, null when none is pinned, or when it was deleted or \
            the caller may not see it.
            """)

    public static let getMany = RPCMethod<GetTweetsParams, [Tweet]>(
        "tweets.getMany", access: .internal,
        summary: """
            Internal. The Tweets of ids (at most 1,000), in the order asked, relative to viewerId; unknown ids are \
            left out, deleted tweets are marked deleted without their text, or left out when omitDeleted is true. \
            A tweet is shown once however many of ids are it or reposts of it (first come), and a repost not at all \
            once taken back or its original deleted, when the original's author and viewerId blocked one another, or \
            when viewerId mutes the original's author. shownBefore (at most 1,000 ids: what the pages before this one \
            showed) counts as shown already: none of ids that is one of their tweets, or a repost of one, is shown.
            """)

    public static let recentIds = RPCMethod<RecentIDsParams, [RecentTweet]>(
        "tweets.recentIds", access: .internal,
        summary: """
            Internal. The newest live tweets (replies and reposts included) of authorIds (at most 5,000), newest first across \
            them, at most limit (1-800), older than the tweet id before when given: [{id, authorId}].
            """)

    public static let statsMany = RPCMethod<TweetStatsParams, [UserTweetStats]>(
        "tweets.statsMany", access: .internal,
        summary: """
            Internal. How many live tweets each of ids (at most 1,000 user ids) has, in the order asked: [{userId, \
            tweets}]. Exact up to 1,000; a larger count may lag the latest posts by up to 10 seconds.
            """)
}

/// Params of `tweets.create`.
public struct CreateTweetParams: Codable, Sendable {
    public var text: String
    public var replyTo: EntityID?
    public var mediaIds: [EntityID]?
    /// The tweet this one quotes.
    public var quoteOf: EntityID?
    /// The same key from the same author returns the first tweet instead of making a second.
    public var idempotencyKey: String?

    public init(
        text: String, replyTo: EntityID? = nil, mediaIds: [EntityID]? = nil, quoteOf: EntityID? = nil,
        idempotencyKey: String? = nil
    ) {
        self.text = text
        self.replyTo = replyTo
        self.mediaIds = mediaIds
        self.quoteOf = quoteOf
        self.idempotencyKey = idempotencyKey
    }
}

/// Params naming one tweet.
public struct TweetParams: Codable, Sendable {
    public var tweetId: EntityID

    public init(tweetId: EntityID) {
        self.tweetId = tweetId
    }
}

/// Params of a page about one tweet: its replies (`tweets.replies`), its likers (`tweets.likers`).
public struct RepliesParams: Codable, Sendable {
    public var tweetId: EntityID
    public var limit: PageLimit?
    public var cursor: String?

    public init(tweetId: EntityID, limit: PageLimit? = nil, cursor: String? = nil) {
        self.tweetId = tweetId
        self.limit = limit
        self.cursor = cursor
    }
}

/// Params of `tweets.byUser`.
public struct ByUserParams: Codable, Sendable {
    public var userId: EntityID
    public var limit: PageLimit?
    public var cursor: String?
    /// Whether replies are listed too (default false).
    public var includeReplies: Bool?

    public init(userId: EntityID, limit: PageLimit? = nil, cursor: String? = nil, includeReplies: Bool? = nil) {
        self.userId = userId
        self.limit = limit
        self.cursor = cursor
        self.includeReplies = includeReplies
    }
}

/// Params of `tweets.byHashtag`.
public struct HashtagPageParams: Codable, Sendable {
    public var hashtag: String
    public var limit: PageLimit?
    public var cursor: String?

    public init(hashtag: String, limit: PageLimit? = nil, cursor: String? = nil) {
        self.hashtag = hashtag
        self.limit = limit
        self.cursor = cursor
    }
}

/// Params of `tweets.latest`.
public struct LatestParams: Codable, Sendable {
    public var limit: PageLimit?
    public var cursor: String?
    /// Whether only tweets with media are listed (default false).
    public var mediaOnly: Bool?

    public init(limit: PageLimit? = nil, cursor: String? = nil, mediaOnly: Bool? = nil) {
        self.limit = limit
        self.cursor = cursor
        self.mediaOnly = mediaOnly
    }
}

/// Params of `tweets.trending`.
public struct TrendingParams: Codable, Sendable {
    public var limit: PageLimit?

    public init(limit: PageLimit? = nil) {
        self.limit = limit
    }
}

/// One element of `tweets.trending`: a hashtag (lower-case, without `#`) and its uses in the last hour.
public struct TrendingHashtag: Codable, Sendable, Hashable {
    public var hashtag: String
    public var uses: Int64

    public init(hashtag: String, uses: Int64) {
        self.hashtag = hashtag
        self.uses = uses
    }
}

/// The result of `tweets.bookmark` and `tweets.unbookmark`: whether the tweet is now bookmarked.
public struct BookmarkState: Codable, Sendable {
    public var bookmarked: Bool

    public init(bookmarked: Bool) {
        self.bookmarked = bookmarked
    }
}

/// The result of `tweets.pin` and `tweets.unpin`: the caller's pinned tweet now.
public struct PinState: Codable, Sendable {
    public var pinnedTweetId: EntityID?

    public init(pinnedTweetId: EntityID?) {
        self.pinnedTweetId = pinnedTweetId
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(pinnedTweetId, forKey: .pinnedTweetId)
    }

    private enum CodingKeys: String, CodingKey {
        case pinnedTweetId
    }
}

/// The result of `tweets.pinned`.
public struct PinnedTweet: Codable, Sendable {
    public var tweet: Tweet?

    public init(tweet: Tweet?) {
        self.tweet = tweet
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(tweet, forKey: .tweet)
    }

    private enum CodingKeys: String, CodingKey {
        case tweet
    }
}

/// The result of `tweets.delete`.
public struct DeleteResult: Codable, Sendable {
    public var deleted: Bool

    public init(deleted: Bool) {
        self.deleted = deleted
    }
}

/// Params of `tweets.getMany`.
public struct GetTweetsParams: Codable, Sendable {
    public var ids: [EntityID]
    public var viewerId: EntityID?
    public var omitDeleted: Bool?
    public var shownBefore: [EntityID]?

    public init(ids: [EntityID], viewerId: EntityID? = nil, omitDeleted: Bool? = nil, shownBefore: [EntityID]? = nil) {
        self.ids = ids
        self.viewerId = viewerId
        self.omitDeleted = omitDeleted
        self.shownBefore = shownBefore
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
