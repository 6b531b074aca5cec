import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import Redis
import TestSupport
import Testing

@Suite("tweets.byHashtag, bookmarks and tweets.trending")
struct EngagementTests {
    @Test("a hashtag's page lists its tweets newest first, whatever the case or the #; a bad hashtag is refused")
    func hashtagPage() async throws {
        let stack = try await TweetsStack.shared()
        let alice = try await stack.makeUser("tags")
        let tag = "zt\(Int.random(in: 100_000...999_999))"
        let a = try await stack.tweet(alice, "first #\(tag)")
        _ = try await stack.tweet(alice, "no tag here, just \(tag)")
        let b = try await stack.tweet(alice, "second #\(tag.uppercased()) and #other")
        for given in [tag, "#\(tag)", tag.uppercased()] {
            let page = try await stack.call("tweets", "tweets.byHashtag", ["hashtag": .string(given)], decoding: TweetPage.self)
            #expect(page.items.map(\.id) == [b.id, a.id])
        }
        let first = try await stack.call("tweets", "tweets.byHashtag", ["hashtag": .string(tag), "limit": 1], decoding: TweetPage.self)
        let second = try await stack.call(
            "tweets", "tweets.byHashtag", ["hashtag": .string(tag), "limit": 1, "cursor": .string(try #require(first.nextCursor))],
            decoding: TweetPage.self)
        #expect(first.items.map(\.id) == [b.id] && second.items.map(\.id) == [a.id])
        for bad in ["", "#", "two words", "#a#b", String(repeating: "x", count: 101)] {
            let error = await rpcError { _ = try await stack.call("tweets", "tweets.byHashtag", ["hashtag": .string(bad)], decoding: TweetPage.self) }
            #expect(error?.field == "hashtag", "\(bad)")
        }
    }

    @Test("bookmarks are the caller's own, most recent first, idempotent, and leave with a deleted tweet")
    func bookmarks() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob) = (try await stack.makeUser("marks"), try await stack.makeUser("other"))
        let (a, b) = (try await stack.tweet(bob, "keep this"), try await stack.tweet(bob, "and this"))
        func mark(_ id: EntityID, _ method: String = "tweets.bookmark", as user: StackUser) async throws -> BookmarkState {
            try await stack.call("tweets", method, ["tweetId": .string(id.description)], as: user, decoding: BookmarkState.self)
        }
        func marked(_ user: StackUser) async throws -> [EntityID] {
            try await stack.call("tweets", "tweets.bookmarks", [:], as: user, decoding: TweetPage.self).items.map(\.id)
        }
        #expect(try await mark(a.id, as: alice).bookmarked)
        #expect(try await mark(b.id, as: alice).bookmarked)
        #expect(try await mark(a.id, as: alice).bookmarked)  // again: nothing changes
        #expect(try await marked(alice) == [b.id, a.id])
        #expect(try await marked(bob).isEmpty)
        #expect(try await !mark(b.id, "tweets.unbookmark", as: alice).bookmarked)
        #expect(try await marked(alice) == [a.id])
        _ = try await stack.call("tweets", "tweets.delete", ["tweetId": .string(a.id.description)], as: bob, decoding: DeleteResult.self)
        #expect(try await marked(alice).isEmpty)
        let gone = await rpcError { _ = try await mark(a.id, as: alice) }
        #expect(gone?.reason == "not_found")
        let anonymous = await rpcError { _ = try await stack.call("tweets", "tweets.bookmarks", [:], decoding: TweetPage.self) }
        #expect(anonymous?.reason == "unauthenticated")
    }

    @Test("trending counts the hour's hashtags, most used first, and forgets the minutes that left the hour")
    func trending() async throws {
        let stack = try await TweetsStack.shared()
        let alice = try await stack.makeUser("trend")
        let (hot, warm) = ("hot\(Int.random(in: 100_000...999_999))", "warm\(Int.random(in: 100_000...999_999))")
        for text in ["#\(hot)", "#\(hot) #\(warm)", "again #\(hot)", "#\(warm.uppercased())"] { _ = try await stack.tweet(alice, text) }
        func uses() async throws -> [String: Int64] {
            let top = try await stack.call("tweets", "tweets.trending", ["limit": 100], decoding: [TrendingHashtag].self)
            #expect(top.map(\.uses) == top.map(\.uses).sorted(by: >))
            return Dictionary(top.map { ($0.hashtag, $0.uses) }) { first, _ in first }
        }
        #expect(await eventually { (try? await uses()).map { $0[hot] == 3 && $0[warm] == 2 } == true })
        // A minute an hour old, as posts then would have left it, and not retired yet (as if no
        // instance had run since): the next sweep takes it out of the hour.
        let old = Int64(Date().timeIntervalSince1970 / 60) - 61
        let gone = "old\(Int.random(in: 100_000...999_999))"
        let seeded = try await stack.redis.pipeline([
            ["ZINCRBY", RedisArgument("{aviary:tweets:trending}:minute:\(old)"), 5, RedisArgument(gone)],
            ["ZINCRBY", "{aviary:tweets:trending}:hour", 5, RedisArgument(gone)],
            ["DEL", RedisArgument("{aviary:tweets:trending}:retired:\(old)")],
        ])
        #expect(seeded[1].string == "5")
        // Looked for in the hour's sum itself: an answer of the service may be a second old.
        #expect(await eventually(timeout: .seconds(25)) {
            (try? await stack.redis.send(["ZSCORE", "{aviary:tweets:trending}:hour", RedisArgument(gone)])) == .some(.null)
        })
        #expect(await eventually { (try? await uses()[gone]) == .some(nil) })
        #expect(try await uses()[hot] == 3)
    }
}
