import AviaryAPI
import AviaryJSON
import Logging
import RPC
import ServiceKit

extension TweetsService {
    @Sendable func replies(_ params: RepliesParams, _ context: RPCContext) async throws -> RawJSON {
        let after = try KeysetCursor.decodeID(params.cursor)
        let page = try await store.replies(
            to: params.tweetId.value, after: after, limit: (params.limit ?? PageLimit()).value,
            using: await reads.client(reading: Self.replies(to: params.tweetId.value)))
        if page.ids.isEmpty, after == nil, try await store.tweets([params.tweetId.value], viewer: nil).isEmpty {
            throw Self.unknownTweet(params.tweetId)
        }
        return try await hydrated(page, context)
    }

    @Sendable func likers(_ params: RepliesParams, _ context: RPCContext) async throws -> Page<UserSummary> {
        let before = try KeysetCursor.decodeID(params.cursor)
        let page = try await store.likers(of: params.tweetId.value, before: before, limit: (params.limit ?? PageLimit()).value)
        if page.ids.isEmpty, before == nil, try await store.tweets([params.tweetId.value], viewer: nil).values.allSatisfy(\.deleted) {
            throw Self.unknownTweet(params.tweetId)
        }
        let users = try await accounts.summaries(page.ids, context: context)
        return Page(items: page.ids.compactMap { users[$0] }, nextCursor: page.next?.encoded)
    }

    @Sendable func byUser(_ params: ByUserParams, _ context: RPCContext) async throws -> RawJSON {
        let before = try KeysetCursor.decodeID(params.cursor)
        let page = try await store.byAuthor(
            params.userId.value, includeReplies: params.includeReplies ?? false, before: before,
            limit: (params.limit ?? PageLimit()).value, using: await reads.client(reading: Self.authorsTweets(params.userId.value)))
        if page.ids.isEmpty, before == nil { try await requireUser(params.userId, context) }
        return try await hydrated(page, context)
    }

    @Sendable func likedBy(_ params: UserPageParams, _ context: RPCContext) async throws -> RawJSON {
        let cursor = try TweetCursor.timed(params.cursor)
        let page = try await store.liked(by: params.userId.value, after: cursor, limit: (params.limit ?? PageLimit()).value)
        if page.ids.isEmpty, cursor == nil { try await requireUser(params.userId, context) }
        return try await hydrated(page, context)
    }

    @Sendable func search(_ params: SearchParams, _ context: RPCContext) async throws -> RawJSON {
        let query = try TextRules.text(params.query, field: "query", allowed: 1...Self.searchQueryLimit)
        var words: [Substring] = []
        var hashtags: [String] = []
        for token in query.split(whereSeparator: { $0.isWhitespace }) {
            if token.hasPrefix("#") {
                hashtags += TweetText(String(token)).hashtags.filter { !hashtags.contains($0) }
            } else if token.unicodeScalars.contains(where: TextRules.isNameScalar) {
                words.append(token)
            }
        }
        guard !words.isEmpty || !hashtags.isEmpty else {
            throw RPCError.validation("query must hold at least one word or #hashtag", field: "query")
        }
        // A caller who posted lately searches the primary, so their own tweet is found.
        let page = try await store.search(
            words: words.joined(separator: " "), hashtags: hashtags, before: try KeysetCursor.decodeID(params.cursor),
            limit: (params.limit ?? PageLimit()).value, using: await reads.client(reading: context.principal.map { Self.authorsTweets($0.userID) }))
        return try await hydrated(page, context)
    }

    /// What a read of `author`'s tweets names for ``ReplicaReads``: `tweets-by:<id>`, marked when
    /// they post or delete.
    static func authorsTweets(_ author: Int64) -> String { "tweets-by:\(author)" }

    /// What a read of the replies to `tweet` names for ``ReplicaReads``: `replies:<id>`.
    static func replies(to tweet: Int64) -> String { "replies:\(tweet)" }

    /// Marks what a post or a delete by `author` (replying to `parent`) changed, for ``ReplicaReads``.
    func recordWrite(by author: Int64, parent: Int64?) async {
        await reads.recordWrite(to: [Self.authorsTweets(author)] + (parent.map { [Self.replies(to: $0)] } ?? []))
    }

    static let searchQueryLimit = 100

    @Sendable func byHashtag(_ params: HashtagPageParams, _ context: RPCContext) async throws -> RawJSON {
        let given = params.hashtag.hasPrefix("#") ? String(params.hashtag.dropFirst()) : params.hashtag
        let tags = TweetText("#" + given).hashtags
        guard (1...Self.searchQueryLimit).contains(given.count), tags == [given.lowercased()] else {
            throw RPCError.validation(
                "hashtag must be 1 to \(Self.searchQueryLimit) letters, digits or underscores, with or without its #",
                field: "hashtag")
        }
        let page = try await store.search(
            words: "", hashtags: tags, before: try KeysetCursor.decodeID(params.cursor), limit: (params.limit ?? PageLimit()).value,
            using: await reads.client(reading: context.principal.map { Self.authorsTweets($0.userID) }))
        return try await hydrated(page, context, hidingMuted: true)
    }

    @Sendable func latest(_ params: LatestParams, _ context: RPCContext) async throws -> RawJSON {
        let page = try await store.latest(
            mediaOnly: params.mediaOnly ?? false, before: try KeysetCursor.decodeID(params.cursor),
            limit: (params.limit ?? PageLimit()).value,
            using: await reads.client(reading: context.principal.map { Self.authorsTweets($0.userID) }))
        return try await hydrated(page, context, hidingMuted: true)
    }

    @Sendable func trending(_ params: TrendingParams, _ context: RPCContext) async throws -> [TrendingHashtag] {
        try await trends.top((params.limit ?? PageLimit()).value).map { TrendingHashtag(hashtag: $0.hashtag, uses: $0.uses) }
    }

    @Sendable func bookmarks(_ params: PageParams, _ context: RPCContext) async throws -> RawJSON {
        let caller = try context.requireUser()
        let page = try await store.bookmarked(by: caller, after: try TweetCursor.timed(params.cursor), limit: (params.limit ?? PageLimit()).value)
        return try await hydrated(page, context)
    }

    @Sendable func bookmark(_ params: TweetParams, _ context: RPCContext) async throws -> BookmarkState {
        let caller = try context.requireUser()
        guard try await store.bookmark(params.tweetId.value, by: caller) else { throw Self.unknownTweet(params.tweetId) }
        return BookmarkState(bookmarked: true)
    }

    @Sendable func unbookmark(_ params: TweetParams, _ context: RPCContext) async throws -> BookmarkState {
        let caller = try context.requireUser()
        try await store.unbookmark(params.tweetId.value, by: caller)
        return BookmarkState(bookmarked: false)
    }

    @Sendable func pin(_ params: TweetParams, _ context: RPCContext) async throws -> PinState {
        let caller = try context.requireUser()
        switch try await store.pin(params.tweetId.value, by: caller) {
        case .unknown: throw Self.unknownTweet(params.tweetId)
        case .notTheirs: throw RPCError.forbidden("only your own tweets can be pinned on your profile")
        case .pinned: return PinState(pinnedTweetId: params.tweetId)
        }
    }

    @Sendable func unpin(_ params: Empty, _ context: RPCContext) async throws -> PinState {
        try await store.unpin(by: try context.requireUser())
        return PinState(pinnedTweetId: nil)
    }

    /// `{"tweet": …}`: the pinned tweet as the caller sees it, or null when there is none to show
    /// (none pinned, deleted, its author suspended or blocking the caller either way).
    @Sendable func pinned(_ params: UserParams, _ context: RPCContext) async throws -> RawJSON {
        let viewer = context.principal?.userID
        let author = params.userId.value
        var tweet: RawJSON?
        if let id = try await store.pinned(by: author) {
            var hidden = false
            if let viewer { hidden = try await !resources.blocked(among: [author], with: viewer, context: context).isEmpty }
            if !hidden { tweet = try await hydrator.json([id], viewer: viewer, omitDeleted: true, context: context).first }
        }
        var bytes = Array(#"{"tweet":"#.utf8)
        bytes.append(contentsOf: (tweet ?? .null).bytes)
        bytes.append(UInt8(ascii: "}"))
        return RawJSON(unchecked: bytes)
    }

    /// The page's tweets for the caller, as `{items, nextCursor}`, without those of users the
    /// caller blocked or who blocked the caller. The cursor follows the stored order, so a tweet
    /// deleted or left out between the two reads shifts nothing.
    /// The page's tweets as `viewer` sees them: without those of users blocked either way with
    /// them and, in the timelines of everyone's tweets (`hidingMuted`), of users they mute.
    private func hydrated(_ page: TweetListPage, _ context: RPCContext, hidingMuted: Bool = false) async throws -> RawJSON {
        let viewer = context.principal?.userID
        var ids = page.ids
        if let viewer, !ids.isEmpty {
            var hidden = try await resources.blocked(among: page.authors.values, with: viewer, context: context)
            if hidingMuted { hidden.formUnion(await Self.mutedOrNone(by: viewer, resources: resources, context: context)) }
            if !hidden.isEmpty { ids.removeAll { page.authors[$0].map(hidden.contains) ?? false } }
        }
        let items = try await hydrator.json(ids, viewer: viewer, omitDeleted: true, context: context)
        return PageJSON.page(items, nextCursor: page.next?.encoded)
    }

    /// Whom `viewer` mutes, or no one (logged) while social-graph cannot say: a mute only hides,
    /// so a read goes on showing what it would hide rather than failing.
    static func mutedOrNone(by viewer: Int64, resources: ServiceResources, context: RPCContext?) async -> Set<Int64> {
        do {
            return try await resources.muted(by: viewer, context: context)
        } catch {
            (context?.logger ?? resources.logger).warning("mutes unknown: muted users' tweets are shown", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// Tells an empty list of a real user from a list of no one: `not_found` for an unknown user.
    private func requireUser(_ id: EntityID, _ context: RPCContext) async throws {
        guard try await accounts.summaries([id.value], context: context)[id.value] != nil else {
            throw RPCError.notFound("no user has the id \(id)")
        }
    }
}
