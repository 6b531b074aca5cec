import AviaryAPI
import AviaryJSON
import Logging
import RPC

/// Turns tweet ids into the `Tweet`s clients see, in a constant number of round trips however many
/// there are: the states (counts and flags, `likedByMe`, `repostedByMe`: at most two Postgres
/// queries, none for states this process holds) alongside one Redis `MGET` of the bodies it does not
/// hold, and for the tweets not cached one query of their rows, then one `auth.getUsers` and one
/// `media.getMany` call; the bodies built then are cached after the reply is on its way. Reposts
/// and quotes repeat those steps once each for the tweets they show.
struct TweetHydrator: Sendable {
    let store: TweetStore
    let states: TweetStates
    let cache: TweetCache
    let accounts: Accounts
    let media: MediaLibrary
    /// Whose tweets are left out: accounts an admin suspended.
    let suspended: SuspendedAuthors
    /// Which of some authors and a viewer blocked one another
    /// (``ServiceKit/ServiceResources/blocked(among:with:context:)``).
    let blocks: @Sendable ([Int64], Int64, RPCContext?) async throws -> Set<Int64>
    /// Whom a viewer mutes (``ServiceKit/ServiceResources/muted(by:context:)``): their tweets are not
    /// shown as others' reposts.
    let mutes: @Sendable (Int64, RPCContext?) async -> Set<Int64>
    let logger: Logger

    /// The tweets of `ids` as JSON, in that order, relative to `viewer`. Ids of no tweet, and
    /// tweets of suspended accounts, are left out; deleted tweets are marked `deleted` without their
    /// content, or left out with `omitDeleted`. A repost shows as its original (``Entry``).
    func json(_ ids: [Int64], viewer: Int64?, omitDeleted: Bool = false, context: RPCContext?) async throws -> [RawJSON] {
        try await shown(ids, viewer: viewer, omitDeleted: omitDeleted, context: context).map { entry in
            var bytes: [UInt8] = []
            entry.append(to: &bytes)
            return RawJSON(unchecked: bytes)
        }
    }

    /// The same tweets as one JSON array, written straight into one buffer (`tweets.getMany`, which
    /// every home timeline read asks for: no array per tweet, and no copy to join them).
    /// `shownBefore`: what the pages before this one showed (``shown(_:viewer:omitDeleted:shownBefore:context:)``).
    func jsonArray(_ ids: [Int64], viewer: Int64?, omitDeleted: Bool, shownBefore: [Int64] = [], context: RPCContext?) async throws -> RawJSON {
        let entries = try await shown(ids, viewer: viewer, omitDeleted: omitDeleted, shownBefore: shownBefore, context: context)
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(entries.reduce(2) { $0 + $1.size })
        for (index, entry) in entries.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            entry.append(to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        return RawJSON(unchecked: bytes)
    }

    /// One tweet to show: its body and stored row, and what a read adds to them.
    struct Entry {
        var body: [UInt8]
        var row: StoredTweet
        /// The tweet it quotes, written whole (without its own quote); nil shows `null`.
        var quote: (body: [UInt8], row: StoredTweet)?
        /// The reposter's summary and the repost's id, when the entry is a repost.
        var repost: (reposter: ArraySlice<UInt8>, id: Int64)?

        var size: Int { body.count + (quote?.body.count ?? 0) + (repost?.reposter.count ?? 0) + 240 }

        func append(to bytes: inout [UInt8]) {
            TweetJSON.append(body, row, to: &bytes)
            bytes.removeLast()
            bytes.append(contentsOf: #","quote":"#.utf8)
            if let quote {
                TweetJSON.append(quote.body, quote.row, to: &bytes)
            } else {
                bytes.append(contentsOf: "null".utf8)
            }
            bytes.append(contentsOf: #","repostedBy":"#.utf8)
            if let repost {
                bytes.append(contentsOf: repost.reposter)
                bytes.append(contentsOf: #","repostId":""#.utf8)
                bytes.append(contentsOf: String(repost.id).utf8)
                bytes.append(contentsOf: #""}"#.utf8)
            } else {
                bytes.append(contentsOf: #"null,"repostId":null}"#.utf8)
            }
        }
    }

    /// The states and bodies read so far.
    private struct Loaded {
        var states: [Int64: StoredTweet] = [:]
        var bodies: [Int64: [UInt8]] = [:]

        /// The tweet `id` when it can be shown: stored, live or shown deleted, with a body.
        func tweet(_ id: Int64, deleted allowed: Bool) -> (body: [UInt8], row: StoredTweet)? {
            guard let state = states[id], allowed || !state.deleted, let body = bodies[id] else { return nil }
            return (body, state)
        }
    }

    /// The entries to show for `ids`, in that order, each tweet once (the first id that is it or a
    /// repost of it): three steps of reads at most (the tweets, the originals of reposts among them,
    /// the tweets those quote), each skipped when it has nothing to read. The tweets of
    /// `shownBefore` (entries of the pages before: tweets, or reposts of them, whose states alone
    /// are read, alongside the first step) count as shown already.
    private func shown(_ ids: [Int64], viewer: Int64?, omitDeleted: Bool, shownBefore: [Int64] = [], context: RPCContext?) async throws -> [Entry] {
        guard !ids.isEmpty else { return [] }
        async let earlier = shownBefore.isEmpty ? [:] : states.states(shownBefore, viewer: viewer).states
        var seen = Set<Int64>()
        let unique = ids.filter { seen.insert($0).inserted }
        var loaded = Loaded()
        try await load(unique, viewer: viewer, keepDeleted: !omitDeleted, into: &loaded, context: context)
        let originals = Set(unique.compactMap { id in loaded.states[id].flatMap { $0.deleted ? nil : $0.repostOf } })
        try await load(originals.filter { loaded.states[$0] == nil }, viewer: viewer, keepDeleted: false, into: &loaded, context: context)
        let quotes = Set((unique + originals).compactMap { loaded.states[$0]?.quoteOf })
        try await load(quotes.filter { loaded.states[$0] == nil }, viewer: viewer, keepDeleted: true, into: &loaded, context: context)
        // Reposts and quotes bring other authors' tweets in: those blocked with the viewer stay out,
        // and reposts of those the viewer mutes.
        var hidden: Set<Int64> = []
        var muted: Set<Int64> = []
        if let viewer, !originals.isEmpty || !quotes.isEmpty {
            let others = originals.union(quotes).compactMap { loaded.states[$0]?.authorID }
            hidden = try await blocks(others, viewer, context)
            if !originals.isEmpty { muted = await mutes(viewer, context) }
        }
        func visible(_ tweet: (body: [UInt8], row: StoredTweet)) -> Bool {
            guard let author = tweet.row.authorID else { return true }
            return !suspended.contains(author) && !hidden.contains(author)
        }
        func entry(_ id: Int64, repost: (reposter: ArraySlice<UInt8>, id: Int64)?) -> Entry? {
            guard let tweet = loaded.tweet(id, deleted: !omitDeleted && repost == nil), visible(tweet) else { return nil }
            let quote = tweet.row.quoteOf.flatMap { loaded.tweet($0, deleted: true) }.flatMap { visible($0) ? $0 : nil }
            return Entry(body: tweet.body, row: tweet.row, quote: quote, repost: repost)
        }
        var shownTweets = Set(try await earlier.values.filter { !$0.deleted }.map { $0.repostOf ?? $0.id })
        return unique.compactMap { id in
            guard let state = loaded.states[id] else { return nil }
            var shown: Entry?
            if let original = state.repostOf {
                guard !state.deleted, !(state.authorID.map(suspended.contains) ?? false),
                    !(loaded.states[original]?.authorID.map(muted.contains) ?? false),
                    let reposter = loaded.bodies[id].flatMap(TweetJSON.reposter(in:))
                else { return nil }
                shown = entry(original, repost: (reposter, id))
            } else {
                shown = entry(id, repost: nil)
            }
            guard let shown, shownTweets.insert(shown.row.id).inserted else { return nil }
            return shown
        }
    }

    /// Reads the states and bodies of `ids` into `loaded`: the states (at most two Postgres
    /// queries, none for states this process holds) alongside the cached bodies, then the rows of
    /// the tweets without one, whose bodies are built and cached after the reply is on its way.
    /// The bodies of deleted tweets are read only with `keepDeleted`.
    private func load(
        _ ids: some Collection<Int64>, viewer: Int64?, keepDeleted: Bool, into loaded: inout Loaded, context: RPCContext?
    ) async throws {
        guard !ids.isEmpty else { return }
        let ids = Array(ids)
        async let statesRead = states.states(ids, viewer: viewer)
        async let cachedBodies = cache.bodies(ids)
        var (shownStates, unreached) = try await statesRead
        var (bodies, epoch) = await cachedBodies
        // Postgres cannot be reached: the tweets whose bodies are cached are shown without their
        // counts, the others (whose rows it alone has) are left out.
        for id in unreached {
            if let body = bodies[id], TweetJSON.reposter(in: body) == nil { shownStates[id] = TweetStates.unknown(id) }
        }
        // A deleted tweet's body is built every time: its cached one, if any, still has the text.
        let missing = ids.filter { id in shownStates[id].map { $0.deleted ? keepDeleted : bodies[id] == nil } ?? false }
        if !missing.isEmpty, unreached.isEmpty {
            // Read after the states: a tweet deleted in between shows as deleted, without its text.
            let rows = try await store.tweets(missing, viewer: viewer)
            for row in rows.values { shownStates[row.id] = StoredTweet(row) }
            let built = try await build(missing.compactMap { rows[$0] }, context: context)
            bodies.merge(built.bodies) { _, new in new }
            if !built.cacheable.isEmpty {
                let cache = self.cache
                Task(executorPreference: EventLoopTaskExecutor.current) { await cache.store(built.cacheable, readSince: epoch) }
            }
        }
        loaded.states.merge(shownStates) { _, new in new }
        loaded.bodies.merge(bodies) { _, new in new }
    }

    /// One tweet as JSON, or nil when there is no such tweet.
    func json(_ id: Int64, viewer: Int64?, context: RPCContext?) async throws -> RawJSON? {
        try await json([id], viewer: viewer, context: context).first
    }

    private struct Built {
        var bodies: [Int64: [UInt8]] = [:]
        /// The bodies of live tweets made from complete data.
        var cacheable: [(id: Int64, body: [UInt8])] = []
    }

    private func build(_ rows: [TweetRow], context: RPCContext?) async throws -> Built {
        let mediaIDs = rows.filter { !$0.deleted }.flatMap(\.mediaIDs)
        async let users = accounts.summaries(rows.flatMap(\.userIDs), context: context)
        async let attachments = mediaIfReachable(mediaIDs, context: context)
        let (summaries, found) = try await (users, attachments)
        var built = Built()
        for row in rows {
            var complete = true
            func summary(_ id: Int64) -> UserSummary {
                if let user = summaries[id] { return user }
                complete = false
                return UserSummary(id: EntityID(id), username: "", fullname: "", profileImageUrl: nil)
            }
            if row.repostOf != nil {
                let bytes = try TweetJSON.repostBody(reposter: summary(row.authorID))
                built.bodies[row.id] = bytes
                if complete && !row.deleted { built.cacheable.append((row.id, bytes)) }
                continue
            }
            var body = TweetBody(
                id: EntityID(row.id), author: summary(row.authorID), text: row.text, createdAt: row.createdAt,
                replyTo: row.replyTo.map(EntityID.init), replyToUser: row.replyToUserID.map(summary),
                mentions: [], hashtags: [], media: [], quoteOf: row.quoteOf.map(EntityID.init))
            if !row.deleted {
                body.mentions = row.mentionIDs.compactMap { summaries[$0] }
                body.hashtags = row.hashtags
                if !row.mediaIDs.isEmpty {
                    if let found {
                        body.media = row.mediaIDs.compactMap { found[$0] }
                    } else {
                        complete = false
                    }
                }
            }
            let bytes = try body.open()
            built.bodies[row.id] = bytes
            if complete && !row.deleted { built.cacheable.append((row.id, bytes)) }
        }
        return built
    }

    /// The media of `ids`, or nil when the media service cannot say: tweets are then shown without
    /// their media rather than not at all, and not cached.
    private func mediaIfReachable(_ ids: [Int64], context: RPCContext?) async -> [Int64: Media]? {
        guard !ids.isEmpty else { return [:] }
        do {
            return try await media.media(ids, context: context)
        } catch {
            logger.warning("showing tweets without their media", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
