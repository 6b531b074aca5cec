import AviaryAPI
import EventStreams
import RPC
import ServiceKit

/// The tweets service: posts, replies, likes and search over its own tables, with authors, mentions
/// and media from the accounts and media services.
public struct TweetsService: Sendable {
    let resources: ServiceResources
    let store: TweetStore
    /// Where the pages that tolerate a little lag are read (``TweetStore/byAuthor(_:includeReplies:before:limit:using:)``).
    let reads: ReplicaReads
    let likes: LikeStore
    let cache: TweetCache
    let states: TweetStates
    let accounts: Accounts
    let media: MediaLibrary
    let hydrator: TweetHydrator
    let suspended: SuspendedAuthors
    let authorCounts: AuthorTweetCounts
    let trends: TrendingHashtags
    /// `AVIARY_TWEETS_MAX_LENGTH`: the longest tweet, links counted as ``TextRules/linkWeight``.
    let maxLength: Int

    init(resources: ServiceResources, copies: LocalCopies?, maxLength: Int) {
        self.resources = resources
        self.maxLength = maxLength
        store = TweetStore(postgres: resources.postgres)
        reads = resources.replicaReads
        likes = LikeStore(postgres: resources.postgres)
        cache = TweetCache(redis: resources.redis, local: copies?.bodies, logger: resources.logger)
        self.states = TweetStates(store: store, local: copies?.states)
        accounts = Accounts(resources: resources, users: copies?.users)
        media = MediaLibrary(resources: resources)
        suspended = SuspendedAuthors(redis: resources.redis, logger: resources.logger)
        hydrator = TweetHydrator(
            store: store, states: self.states, cache: cache, accounts: accounts, media: media, suspended: suspended,
            blocks: { others, viewer, context in try await resources.blocked(among: others, with: viewer, context: context) },
            mutes: { viewer, context in await TweetsService.mutedOrNone(by: viewer, resources: resources, context: context) },
            logger: resources.logger)
        authorCounts = AuthorTweetCounts(store: store, redis: resources.redis, local: copies?.counts)
        trends = TrendingHashtags(redis: resources.redis, logger: resources.logger)
    }

    /// `ServiceDefinition.register`: builds the service from the runtime's resources and registers its
    /// methods. The process keeps in memory up to `AVIARY_TWEETS_LOCAL_BODIES` tweet bodies (default
    /// 20,000, about 10 MiB), as many tweet states, summaries of users who post and authors' tweet
    /// counts (0 keeps none: every body is read from Redis, every state and count from Postgres and
    /// every author asked of auth).
    static func register(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        resources.keepBlocksInMemory()
        resources.keepMutesInMemory()
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
        let service = TweetsService(resources: resources, copies: copies, maxLength: maxLength)
        service.registerMethods(with: &router)
        resources.addBackgroundService(PeriodicJob(every: TrendingHashtags.retireInterval) { await service.trends.retire() })
        resources.addBackgroundService(PeriodicJob(every: SuspendedAuthors.refreshInterval) { await service.suspended.refresh() })
        resources.consume(ProfileUpdates.consumer(resources, suspended: service.suspended))
    }

    func registerMethods(with router: inout RPCRouter) {
        router.register(TweetsAPI.create, summary: TweetsAPI.createSummary(maxLength: maxLength), encoded: create)
        router.register(TweetsAPI.get, encoded: get)
        router.register(TweetsAPI.delete, handler: delete)
        router.register(TweetsAPI.like, handler: like)
        router.register(TweetsAPI.unlike, handler: unlike)
        router.register(TweetsAPI.repost, handler: repost)
        router.register(TweetsAPI.unrepost, handler: unrepost)
        router.register(TweetsAPI.reposters, handler: reposters)
        router.register(TweetsAPI.replies, encoded: replies)
        router.register(TweetsAPI.likers, handler: likers)
        router.register(TweetsAPI.byUser, encoded: byUser)
        router.register(TweetsAPI.likedBy, encoded: likedBy)
        router.register(TweetsAPI.search, encoded: search)
        router.register(TweetsAPI.byHashtag, encoded: byHashtag)
        router.register(TweetsAPI.latest, encoded: latest)
        router.register(TweetsAPI.trending, handler: trending)
        router.register(TweetsAPI.bookmark, handler: bookmark)
        router.register(TweetsAPI.unbookmark, handler: unbookmark)
        router.register(TweetsAPI.bookmarks, encoded: bookmarks)
        router.register(TweetsAPI.pin, handler: pin)
        router.register(TweetsAPI.unpin, handler: unpin)
        router.register(TweetsAPI.pinned, encoded: pinned)
        router.register(TweetsAPI.getMany, encoded: getMany)
        router.register(TweetsAPI.recentIds, encoded: recentIDs)
        router.register(TweetsAPI.statsMany, handler: statsMany)
    }
}
