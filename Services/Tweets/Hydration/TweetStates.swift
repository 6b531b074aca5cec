import EventStreams
import Postgres
import RPC

/// The counts and flags of tweets as a viewer sees them, for every read of a tweet.
///
/// Postgres has them (``TweetStore/states(_:)``), and this process holds those it read lately
/// (``LocalCopy``), so that the tweets many people read cost no query: a home timeline read asks
/// for twenty. A state lists the tweet's likers while there are few, which answers `likedByMe` for
/// any viewer; only for tweets liked more widely is the viewer's own like looked up.
///
/// Every write that changes a state (a like, an unlike, a repost, a reply, a delete) calls
/// ``changed(_:by:)`` once it has committed and before it answers, which drops the state from the
/// writer's process at once and marks the writer, whose own reads skip every process's copy until
/// the others surely heard of it; the outbox relay announces its tweets with its event
/// (``changedBy``, ``EventStreams/LocalCopyKind/announcer(_:redis:)``), which drops them from every
/// other process a moment later.
struct TweetStates: Sendable {
    let store: TweetStore
    /// This process's copy of the states read lately, if it keeps one.
    let local: LocalCopy<TweetState>?

    /// The states of the stored tweets among `ids` (any order), relative to `viewer`.
    ///
    /// While Postgres cannot be reached, or has not answered within ``patience``, the states this
    /// process holds still answer, and the others are left out (`unreached` lists them): the caller
    /// may show those tweets as ``unknown(_:)`` where it has another sign that they exist.
    func states(_ ids: [Int64], viewer: Int64?) async throws -> (states: [Int64: StoredTweet], unreached: [Int64]) {
        var (found, epoch) = await local?.values(ids, viewer: viewer) ?? ([:], nil)
        let asked = found.isEmpty ? ids : ids.filter { found[$0] == nil }
        var unreached: [Int64] = []
        var likedWidely: Set<Int64> = []
        var repostedWidely: Set<Int64> = []
        // One budget for both reads: a read waits for Postgres ``patience`` in all.
        try await PostgresClient.waiting(atMost: Self.patience) {
            if !asked.isEmpty {
                do {
                    let fetched = try await store.states(asked)
                    local?.keep(fetched.lazy.map { (key: $0.key, value: $0.value) }, since: epoch)
                    found.merge(fetched) { _, new in new }
                } catch let error as PostgresError where error.isUnreachable {
                    unreached = asked
                }
            }
            if let viewer {
                let unlisted = found.values.filter { $0.likers == nil }.map(\.id)
                let unlistedReposts = found.values.filter { $0.reposters == nil }.map(\.id)
                do {
                    async let liked = store.liked(unlisted, by: viewer)
                    async let reposted = store.reposted(unlistedReposts, by: viewer)
                    (likedWidely, repostedWidely) = try await (liked, reposted)
                } catch let error as PostgresError where error.isUnreachable {
                    // Shown as not liked or reposted by the viewer until Postgres answers again.
                }
            }
        }
        let states = found.mapValues { state in
            let likedByMe = viewer.map { viewer in state.likers?.contains(viewer) ?? likedWidely.contains(state.id) } ?? false
            let repostedByMe =
                viewer.map { viewer in state.reposters?.contains(viewer) ?? repostedWidely.contains(state.id) } ?? false
            return StoredTweet(
                id: state.id, likes: state.likes, replies: state.replies, deleted: state.deleted, likedByMe: likedByMe,
                authorID: state.authorID, reposts: state.reposts, repostedByMe: repostedByMe, repostOf: state.repostOf,
                quoteOf: state.quoteOf)
        }
        return (states, unreached)
    }

    /// How long a read waits for the states Postgres has before it shows the tweets without them:
    /// far above the few milliseconds they take, far below a caller's patience when Postgres stalls.
    static let patience = Duration.milliseconds(500)

    /// The state shown for a tweet whose state Postgres could not give but whose body is cached:
    /// live (a delete drops the cached body), its counts not known (shown as none), and not a repost
    /// (a repost's cached body is its reposter's summary, which is not shown without its original).
    static func unknown(_ id: Int64) -> StoredTweet {
        StoredTweet(
            id: id, likes: 0, replies: 0, deleted: false, likedByMe: false, authorID: nil, reposts: 0, repostedByMe: false,
            repostOf: nil, quoteOf: nil)
    }

    /// Drops the states of `ids`, which `writer` changed, from this process and marks the writer:
    /// call after the write commits, before answering.
    func changed(_ ids: [Int64], by writer: Int64) async {
        await local?.changed(ids, by: writer)
    }

    /// The payload fields of the tweets' events that name tweets whose states they change: a like
    /// or unlike its tweet, a reply its parent, a repost its original, a delete its tweet, parent
    /// and original.
    static let changedBy = [
        "liked": ["tweetId"], "unliked": ["tweetId"], "created": ["replyTo", "repostOf"],
        "deleted": ["tweetId", "replyTo", "repostOf"],
    ]
}
