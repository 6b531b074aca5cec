import AviaryAPI
import AviaryJSON
import EventStreams
import Logging
import RPC
import ServiceKit

extension TweetsService {
    static let idempotencyKeyLimit = 100

    @Sendable func create(_ params: CreateTweetParams, _ context: RPCContext) async throws -> RawJSON {
        let author = try context.requireUser()
        let text = try TextRules.tweet(params.text, limit: maxLength)
        let mediaIDs = try Self.mediaIDs(params.mediaIds)
        let key = try Self.idempotencyKey(params.idempotencyKey)
        let parsed = TweetText(text)

        // The author's summary is needed for the answer whatever happens; asked alongside the checks.
        async let authorSummary = accounts.author(author, context: context)
        async let mentioned = accounts.users(named: parsed.mentions, context: context)
        async let attached = media.media(mediaIDs, ownedBy: author, context: context)
        async let replyAllowed: Void = refuseBlockedReply(by: author, to: params.replyTo, context: context)
        async let quoted = quotable(params.quoteOf, by: author, context: context)
        // Everything that can fail is asked before the tweet is stored: once stored, the call must
        // not fail, or a client told "unavailable, safe to retry" would post it twice.
        let (mentions, found, (authorUser, authorEpoch), _, quoteOf) = try await (
            mentioned, attached, authorSummary, replyAllowed, quoted)
        if let index = mediaIDs.firstIndex(where: { found[$0] == nil }) {
            throw RPCError.validation(
                "mediaIds[\(index)] is not a finished tweet upload of yours: \(mediaIDs[index])", field: "mediaIds")
        }

        let creation = try await store.create(
            TweetStore.NewTweet(
                id: resources.ids.next(), authorID: author, text: text, replyTo: params.replyTo?.value,
                mentionIDs: mentions.map(\.id.value), hashtags: parsed.hashtags, mediaIDs: mediaIDs, quoteOf: quoteOf,
                idempotencyKey: key))
        switch creation {
        case .unknownParent:
            throw RPCError.notFound("replyTo: no tweet has the id \(params.replyTo?.description ?? "")")
        case .unknownQuote:
            throw RPCError.notFound("quoteOf: no tweet has the id \(params.quoteOf?.description ?? "")")
        case .existing(let id):
            guard let tweet = try await hydrator.json(id, viewer: author, context: context) else {
                throw RPCError.notFound("the tweet of this idempotencyKey no longer exists")
            }
            return tweet
        case .created(let id, let createdAt, let replyToUserID):
            // The event reaches its stream, and other processes hear of the counts it changed, at
            // once rather than at the relay's next poll.
            OutboxRelay.nudge()
            authorCounts.changedHere([author])
            if let parent = params.replyTo { await states.changed([parent.value], by: author) }
            await recordWrite(by: author, parent: params.replyTo?.value)
            var users: [Int64: UserSummary] = authorUser.map { [author: $0] } ?? [:]
            if let replyToUserID, users[replyToUserID] == nil {
                // Known only now; without it the answer carries the parent author's id alone (and
                // is not cached), which later reads fill in.
                do {
                    users.merge(try await accounts.summaries([replyToUserID], context: context)) { first, _ in first }
                } catch {
                    context.logger.warning(
                        "the tweet is stored, but its parent's author could not be read for the answer",
                        metadata: ["tweet.id": "\(id)", "error": "\(error)"])
                }
            }
            func summary(_ id: Int64) -> UserSummary {
                users[id] ?? UserSummary(id: EntityID(id), username: "", fullname: "", profileImageUrl: nil)
            }
            let body = try TweetBody(
                id: EntityID(id), author: summary(author), text: text, createdAt: createdAt,
                replyTo: params.replyTo, replyToUser: replyToUserID.map(summary), mentions: mentions,
                hashtags: parsed.hashtags, media: mediaIDs.compactMap { found[$0] }, quoteOf: quoteOf.map(EntityID.init)
            ).open()
            // Followers' timelines read it next: have it cached already, unless the author's profile
            // changed meanwhile (its consumer may have looked for the tweets to forget before this one).
            if users[author] != nil && (replyToUserID.map { users[$0] != nil } ?? true) && accounts.isCurrent(authorEpoch) {
                let cache = self.cache
                Task(executorPreference: EventLoopTaskExecutor.current) { await cache.store([(id, body)]) }
            }
            if !parsed.hashtags.isEmpty {
                let trends = self.trends
                Task(executorPreference: EventLoopTaskExecutor.current) { await trends.count(parsed.hashtags) }
            }
            var quote: RawJSON?
            if let quoteOf {
                do {
                    quote = try await hydrator.json(quoteOf, viewer: author, context: context)
                } catch {
                    context.logger.warning(
                        "the tweet is stored, but the tweet it quotes could not be read for the answer",
                        metadata: ["tweet.id": "\(id)", "error": "\(error)"])
                }
            }
            return TweetJSON.new(body, quote: quote)
        }
    }

    /// Refuses a reply to a tweet whose author and `author` blocked one another. An unknown parent
    /// passes: the create itself answers it `not_found`.
    private func refuseBlockedReply(by author: Int64, to parent: EntityID?, context: RPCContext) async throws {
        guard let parent, let parentAuthor = try await store.authors(of: [parent.value])[parent.value] else { return }
        try await resources.refuseIfBlocked(author, parentAuthor, "reply to this tweet", context: context)
    }

    /// The tweet `quoteOf` means (``shareable(_:by:_:context:)``), or nil without one.
    private func quotable(_ quoteOf: EntityID?, by author: Int64, context: RPCContext) async throws -> Int64? {
        guard let quoteOf else { return nil }
        return try await shareable(quoteOf, by: author, "quote this tweet", context: context)
    }

    /// The `mediaIds` param: at most four, none twice.
    private static func mediaIDs(_ ids: [EntityID]?) throws(RPCError) -> [Int64] {
        let ids = (ids ?? []).map(\.value)
        guard ids.count <= MediaLibrary.perTweet else {
            throw RPCError.validation("mediaIds must hold at most \(MediaLibrary.perTweet) media, got \(ids.count)", field: "mediaIds")
        }
        guard Set(ids).count == ids.count else {
            throw RPCError.validation("mediaIds must not list the same media twice", field: "mediaIds")
        }
        return ids
    }

    /// The `idempotencyKey` param: 1–100 characters without NUL, or none.
    private static func idempotencyKey(_ key: String?) throws(RPCError) -> String? {
        guard let key else { return nil }
        guard (1...idempotencyKeyLimit).contains(key.unicodeScalars.count),
            !key.unicodeScalars.contains(where: { $0.value == 0 })
        else {
            throw RPCError.validation(
                "idempotencyKey must be 1 to \(idempotencyKeyLimit) characters without NUL", field: "idempotencyKey")
        }
        return key
    }
}
