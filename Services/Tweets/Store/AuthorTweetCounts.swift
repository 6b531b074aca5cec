import EventStreams
import Redis

/// How many live tweets authors have, for the `stats` of their profiles.
///
/// Counting is linear in an author's tweets, even with an index-only scan, and the most prolific authors' profiles are the most viewed. So one statement counts every
/// author's tweets up to `exactUpTo`, which is exact for nearly everyone. Only an author beyond
/// that is counted in full, and their count is then shared through Redis
/// (`aviary:tweets:count:<id>`) for `sharedFor`, so a count in the thousands may lag their latest
/// posts by that much. A write path that kept a count instead cost every create a row update (docs/perf.md,
/// "Choices in the code"), and made one author's concurrent posts wait on each other.
///
/// Each process also holds the counts it read lately (``LocalCopy``, kind `counts`), so that
/// viewing a profile again costs no query. A create or delete drops its author's count from its own
/// process once it has committed (``changedHere(_:)``), and the outbox relay announces the author
/// with its event (``changedBy``, ``EventStreams/LocalCopyKind/announcer(_:redis:)``), which drops
/// it from every other process a moment later.
struct AuthorTweetCounts: Sendable {
    let store: TweetStore
    let redis: RedisClient
    /// This process's copy of the counts read lately, if it keeps one.
    let local: LocalCopy<Int64>?

    static let exactUpTo: Int64 = 1_000
    static let sharedFor = 10

    static func key(_ author: Int64) -> String { "aviary:tweets:count:\(author)" }

    /// The counts of `authors` (those without a live tweet are left out).
    func counts(of authors: [Int64]) async throws -> [Int64: Int64] {
        var (counts, epoch) = local?.values(authors) ?? ([:], nil)
        let asked = Array(Set(authors.filter { counts[$0] == nil }))
        if !asked.isEmpty {
            let fetched = try await stored(asked)
            // Authors without a live tweet are held too, as zero: most profiles viewed have few tweets.
            local?.keep(asked.lazy.map { (key: $0, value: fetched[$0] ?? 0) }, since: epoch)
            counts.merge(fetched) { _, new in new }
        }
        return counts.filter { $0.value > 0 }
    }

    /// Drops `authors`' counts from this process: call after a create or delete commits, before answering.
    func changedHere(_ authors: [Int64]) {
        local?.forget(authors)
    }

    /// The payload fields of the tweets' events that name authors whose counts they change.
    static let changedBy = ["created": ["authorId"], "deleted": ["authorId"]]

    /// The counts of `authors` from Postgres, or for the prolific from Redis while it shares them.
    private func stored(_ authors: [Int64]) async throws -> [Int64: Int64] {
        var counts = try await store.tweetCounts(of: authors, upTo: Self.exactUpTo + 1)
        let prolific = counts.filter { $0.value > Self.exactUpTo }.keys.sorted()
        guard !prolific.isEmpty else { return counts }
        // Redis only spares the full count: while it is unreachable, every such view counts in full.
        let shared = (try? await redis.send(["MGET"] + prolific.map { RedisArgument(Self.key($0)) }))?.array ?? []
        var missing: [Int64] = []
        for (index, author) in prolific.enumerated() {
            if index < shared.count, let count = shared[index].string.flatMap({ Int64($0) }) {
                counts[author] = count
            } else {
                missing.append(author)
            }
        }
        guard !missing.isEmpty else { return counts }
        let full = try await store.tweetCounts(of: missing, upTo: nil)
        counts.merge(full) { _, exact in exact }
        _ = try? await redis.pipeline(
            full.map { ["SET", RedisArgument(Self.key($0.key)), RedisArgument($0.value), "EX", RedisArgument(Self.sharedFor)] })
        return counts
    }
}
