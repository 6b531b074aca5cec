import AviaryAPI
import AviaryJSON
import RPC
import ServiceKit

extension TweetsService {
    @Sendable func replies(_ params: RepliesParams, _ context: RPCContext) async throws -> RawJSON {
        let after = try KeysetCursor.decodeID(params.cursor)
        let page = try await store.replies(
            to: params.tweetId.value, after: after, limit: (params.limit ?? PageLimit()).value)
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
            limit: (params.limit ?? PageLimit()).value)
        if page.ids.isEmpty, before == nil { try await requireUser(params.userId, context) }
        return try await hydrated(page, context)
    }

    @Sendable func likedBy(_ params: UserPageParams, _ context: RPCContext) async throws -> RawJSON {
        let cursor = try TweetCursor.like(params.cursor)
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
        let page = try await store.search(
            words: words.joined(separator: " "), hashtags: hashtags, before: try KeysetCursor.decodeID(params.cursor),
            limit: (params.limit ?? PageLimit()).value)
        return try await hydrated(page, context)
    }

    static let searchQueryLimit = 100

    /// The page's tweets for the caller, as `{items, nextCursor}`. The cursor follows the stored
    /// order, so a tweet deleted between the two reads shifts nothing.
    private func hydrated(_ page: KeysetPage, _ context: RPCContext) async throws -> RawJSON {
        let items = try await hydrator.json(page.ids, viewer: context.principal?.userID, omitDeleted: true, context: context)
        return PageJSON.page(items, nextCursor: page.next?.encoded)
    }

    /// Tells an empty list of a real user from a list of no one: `not_found` for an unknown user.
    private func requireUser(_ id: EntityID, _ context: RPCContext) async throws {
        guard try await accounts.summaries([id.value], context: context)[id.value] != nil else {
            throw RPCError.notFound("no user has the id \(id)")
        }
    }
}
