import AviaryAPI
import AviaryJSON
import Logging
import RPC

/// Turns tweet ids into the `Tweet`s clients see, in a constant number of round trips however many
/// there are: the states (counts and flags, `likedByMe`: at most two Postgres queries, none for
/// states this process holds) alongside one Redis `MGET` of the bodies it does not hold, and for the
/// tweets not cached one query of their rows, then one `auth.getUsers` and one `media.getMany` call;
/// the bodies built then are cached after the reply is on its way.
struct TweetHydrator: Sendable {
    let store: TweetStore
    let states: TweetStates
    let cache: TweetCache
    let accounts: Accounts
    let media: MediaLibrary
    /// Whose tweets are left out: accounts an admin suspended.
    let suspended: SuspendedAuthors
    let logger: Logger

    /// The tweets of `ids` as JSON, in that order, relative to `viewer`. Ids of no tweet, and
    /// tweets of suspended accounts, are left out; deleted tweets are marked `deleted` without their content, or left out with `omitDeleted`.
    func json(_ ids: [Int64], viewer: Int64?, omitDeleted: Bool = false, context: RPCContext?) async throws -> [RawJSON] {
        try await shown(ids, viewer: viewer, omitDeleted: omitDeleted, context: context).map { TweetJSON.finish($0.body, $0.row) }
    }

    /// The same tweets as one JSON array, written straight into one buffer (`tweets.getMany`, which
    /// every home timeline read asks for: no array per tweet, and no copy to join them).
    func jsonArray(_ ids: [Int64], viewer: Int64?, omitDeleted: Bool, context: RPCContext?) async throws -> RawJSON {
        let tweets = try await shown(ids, viewer: viewer, omitDeleted: omitDeleted, context: context)
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(tweets.reduce(2) { $0 + $1.body.count + 80 })
        for (index, tweet) in tweets.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            TweetJSON.append(tweet.body, tweet.row, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        return RawJSON(unchecked: bytes)
    }

    /// The tweets of `ids` that are shown, in that order: each one's body and its stored row.
    private func shown(_ ids: [Int64], viewer: Int64?, omitDeleted: Bool, context: RPCContext?) async throws
        -> [(body: [UInt8], row: StoredTweet)]
    {
        guard !ids.isEmpty else { return [] }
        var seen = Set<Int64>()
        let unique = ids.filter { seen.insert($0).inserted }
        async let statesRead = states.states(unique, viewer: viewer)
        async let cachedBodies = cache.bodies(unique)
        var (shownStates, unreached) = try await statesRead
        var (bodies, epoch) = await cachedBodies
        // Postgres cannot be reached: the tweets whose bodies are cached are shown without their
        // counts, the others (whose rows it alone has) are left out.
        for id in unreached where bodies[id] != nil { shownStates[id] = TweetStates.unknown(id) }
        // A deleted tweet's body is built every time: its cached one, if any, still has the text.
        let missing = unique.filter { id in shownStates[id].map { $0.deleted ? !omitDeleted : bodies[id] == nil } ?? false }
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
        return ids.compactMap { id in
            guard let state = shownStates[id], !(state.deleted && omitDeleted), let body = bodies[id],
                !(state.authorID.map(suspended.contains) ?? false)
            else { return nil }
            return (body, state)
        }
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
            var body = TweetBody(
                id: EntityID(row.id), author: summary(row.authorID), text: row.text, createdAt: row.createdAt,
                replyTo: row.replyTo.map(EntityID.init), replyToUser: row.replyToUserID.map(summary),
                mentions: [], hashtags: [], media: [])
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
