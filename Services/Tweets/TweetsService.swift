import AviaryAPI
import RPC
import ServiceKit

/// The tweets service: posts, replies, likes and search over its own tables, with authors, mentions
/// and media from the accounts and media services.
struct TweetsService: Sendable {
    let resources: ServiceResources
    let store: TweetStore
    let likes: LikeStore
    let cache: TweetCache
    let states: TweetStates
    let accounts: Accounts
    let media: MediaLibrary
    let hydrator: TweetHydrator
    let authorCounts: AuthorTweetCounts
    /// `AVIARY_TWEETS_MAX_LENGTH`: the longest tweet, links counted as ``TextRules/linkWeight``.
    let maxLength: Int

    init(resources: ServiceResources, copies: LocalCopies?, maxLength: Int) {
        self.resources = resources
        self.maxLength = maxLength
        store = TweetStore(postgres: resources.postgres)
        likes = LikeStore(postgres: resources.postgres)
        cache = TweetCache(redis: resources.redis, local: copies?.bodies, logger: resources.logger)
        self.states = TweetStates(store: store, local: copies?.states)
        accounts = Accounts(resources: resources, users: copies?.users)
        media = MediaLibrary(resources: resources)
        hydrator = TweetHydrator(store: store, states: self.states, cache: cache, accounts: accounts, media: media, logger: resources.logger)
        authorCounts = AuthorTweetCounts(store: store, redis: resources.redis, local: copies?.counts)
    }

    /// `ServiceDefinition.register`: builds the service from the runtime's resources and registers its
    /// methods. The process keeps in memory up to `AVIARY_TWEETS_LOCAL_BODIES` tweet bodies (default
    /// 20,000, about 10 MiB), as many tweet states, summaries of users who post and authors' tweet
    /// counts (0 keeps none: every body is read from Redis, every state and count from Postgres and
    /// every author asked of auth).
    static func register(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        let capacity = try resources.configuration.integer("AVIARY_TWEETS_LOCAL_BODIES", default: 20_000, in: 0...1_000_000)
        let copies = capacity == 0 ? nil : LocalCopies(capacity: capacity, redis: resources.redis, logger: resources.logger)
        if let copies {
            resources.addBackgroundService(LocalCopyWatch(redis: resources.redis, watches: copies.watches, logger: resources.logger))
        }
        // The relay announces to every process the tweets whose states, and the authors whose
        // counts, a batch's events change.
        resources.prepareOutboxEvents(
            with: LocalCopyKind.announcer(
                [(.states, TweetStates.changedBy), (.counts, AuthorTweetCounts.changedBy)], redis: resources.redis))
        let maxLength = try resources.configuration.integer(
            "AVIARY_TWEETS_MAX_LENGTH", default: TextRules.tweetLimit, in: 1...10_000)
        TweetsService(resources: resources, copies: copies, maxLength: maxLength).registerMethods(with: &router)
        resources.consume(ProfileUpdates.consumer(resources))
    }

    func registerMethods(with router: inout RPCRouter) {
        router.register(
            "tweets.create",
            summary: """
                Posts a tweet: text of 1 to \(maxLength) characters (Unicode scalars after trimming white space; each \
                http:// or https:// link counts as \(TextRules.linkWeight)), replyTo (a tweet \
                id to reply to; not_found when it does not exist or was deleted), mediaIds (at most 4 of the caller's \
                finished tweet uploads) and idempotencyKey (at most 100 characters: a retried create with the same key \
                returns the first tweet instead of posting a second). @usernames of existing users become mentions and \
                #words hashtags. Returns the Tweet.
                """,
            access: .user, resultShape: Tweet.self, handler: create)
        router.register(
            "tweets.get",
            summary: "One Tweet by tweetId; a deleted one comes back with deleted: true and no text. likedByMe is relative to the caller.",
            access: .anonymous, resultShape: Tweet.self, handler: get)
        router.register(
            "tweets.delete",
            summary: "Deletes the caller's tweet tweetId (forbidden for anyone else's); it leaves every timeline. Deleting it again succeeds.",
            access: .user, handler: delete)
        router.register(
            "tweets.like",
            summary: "Likes tweetId as the caller. Idempotent. Returns {likes, likedByMe}; not_found for a deleted or unknown tweet.",
            access: .user, handler: like)
        router.register(
            "tweets.unlike",
            summary: "Takes back the caller's like of tweetId. Idempotent. Returns {likes, likedByMe}; not_found for a deleted or unknown tweet.",
            access: .user, handler: unlike)
        router.register(
            "tweets.replies",
            summary: "Page of the replies to tweetId ({items: [Tweet], nextCursor}), oldest first; not_found for an unknown tweet.",
            access: .anonymous, resultShape: Page<Tweet>.self, handler: replies)
        router.register(
            "tweets.byUser",
            summary: "Page of userId's tweets ({items: [Tweet], nextCursor}), newest first; replies too when includeReplies is true (default false).",
            access: .anonymous, resultShape: Page<Tweet>.self, handler: byUser)
        router.register(
            "tweets.likedBy",
            summary: "Page of the tweets userId liked ({items: [Tweet], nextCursor}), most recent like first.",
            access: .anonymous, resultShape: Page<Tweet>.self, handler: likedBy)
        router.register(
            "tweets.search",
            summary: """
                Page of tweets ({items: [Tweet], nextCursor}), newest first, holding every word of query and every \
                #hashtag in it (query: 1-100 characters, at least one word or hashtag).
                """,
            access: .anonymous, resultShape: Page<Tweet>.self, handler: search)
        router.register(TweetsAPI.getMany, encoded: getMany)
        router.register(TweetsAPI.recentIds, encoded: recentIDs)
        router.register(TweetsAPI.statsMany, handler: statsMany)
    }
}
