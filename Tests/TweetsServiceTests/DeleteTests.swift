import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import Redis
import TestSupport
import Testing

@Suite("tweets.delete")
struct DeleteTests {
    @Test("only the author deletes; a deleted tweet shows deleted without text, leaves lists and its parent's count, and cannot be liked")
    func delete() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob) = (try await stack.makeUser("author"), try await stack.makeUser("other"))
        let parent = try await stack.tweet(bob, "parent")
        let tweet = try await stack.tweet(alice, "soon gone #gone @\(bob.username)", replyTo: parent.id)
        _ = try await stack.getTweet(tweet.id)  // cached now
        #expect(try await stack.getTweet(parent.id).replies == 1)

        let forbidden = await rpcError {
            _ = try await stack.call("tweets", "tweets.delete", ["tweetId": .id(tweet.id)], as: bob, decoding: JSONValue.self)
        }
        #expect(forbidden?.reason == "forbidden")
        let unknown = await rpcError {
            _ = try await stack.call("tweets", "tweets.delete", ["tweetId": "987654321"], as: alice, decoding: JSONValue.self)
        }
        #expect(unknown?.reason == "not_found")

        let since = Date()
        for _ in 0..<2 {
            let result = try await stack.call("tweets", "tweets.delete", ["tweetId": .id(tweet.id)], as: alice, decoding: JSONValue.self)
            #expect(result["deleted"] == .bool(true))
        }
        let gone = try await stack.getTweet(tweet.id)
        #expect(gone.deleted)
        #expect(gone.text == nil)
        #expect(gone.mentions.isEmpty && gone.hashtags.isEmpty)
        #expect(gone.author.id == alice.id)
        #expect(gone.replyTo == parent.id)
        #expect(try await stack.getTweet(parent.id).replies == 0)

        let liked = await rpcError { _ = try await stack.like(tweet.id, by: bob) }
        #expect(liked?.reason == "not_found")
        let byUser = try await stack.call("tweets", "tweets.byUser", ["userId": .id(alice.id), "includeReplies": true], decoding: TweetPage.self)
        #expect(byUser.items.isEmpty)
        let replies = try await stack.call("tweets", "tweets.replies", ["tweetId": .id(parent.id)], decoding: TweetPage.self)
        #expect(replies.items.isEmpty)
        let search = try await stack.call("tweets", "tweets.search", ["query": "#gone"], decoding: TweetPage.self)
        #expect(!search.items.contains { $0.id == tweet.id })

        let marked = try await stack.callInternal("tweets", "tweets.getMany", ["ids": .ids([tweet.id, parent.id])], decoding: [Tweet].self)
        #expect(marked.map(\.deleted) == [true, false])
        let omitted = try await stack.callInternal(
            "tweets", "tweets.getMany", ["ids": .ids([tweet.id, parent.id]), "omitDeleted": true], decoding: [Tweet].self)
        #expect(omitted.map(\.id) == [parent.id])

        let events = try await stack.tweetEvents(of: tweet.id, since: since).filter { $0.type != "created" }
        #expect(events.map(\.type) == ["deleted"])
        let fields = events.first?.fields ?? [:]
        #expect(fields["replyTo"] == .id(parent.id))
        #expect(fields["replyToAuthorId"] == .id(bob.id))
        #expect(fields["mentionIds"] == .ids([bob.id]))
    }
}

@Suite("tweets.like and tweets.unlike")
struct LikeTests {
    @Test("like and unlike are idempotent, show in likedByMe and likedBy, and record one event per change")
    func likeUnlike() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob) = (try await stack.makeUser("liked"), try await stack.makeUser("liker"))
        let tweet = try await stack.tweet(alice, "like me")
        let since = Date()
        #expect(try await stack.like(tweet.id, by: bob) == LikeState(likes: 1, likedByMe: true))
        #expect(try await stack.like(tweet.id, by: bob) == LikeState(likes: 1, likedByMe: true))
        #expect(try await stack.getTweet(tweet.id, as: bob).likedByMe)
        #expect(try await stack.getTweet(tweet.id, as: alice).likedByMe == false)
        #expect(try await stack.getTweet(tweet.id).likes == 1)
        let likedBy = try await stack.call("tweets", "tweets.likedBy", ["userId": .id(bob.id)], as: bob, decoding: TweetPage.self)
        #expect(likedBy.items.map(\.id) == [tweet.id])
        #expect(likedBy.items.first?.likedByMe == true)

        #expect(try await stack.like(tweet.id, by: bob, false) == LikeState(likes: 0, likedByMe: false))
        #expect(try await stack.like(tweet.id, by: bob, false) == LikeState(likes: 0, likedByMe: false))
        #expect(try await stack.getTweet(tweet.id, as: bob).likedByMe == false)

        let events = try await stack.tweetEvents(of: tweet.id, since: since).filter { $0.type != "created" }
        #expect(events.map(\.type) == ["liked", "unliked"])
        #expect(events.first?.fields["authorId"] == .id(alice.id))
        #expect(events.first?.fields["userId"] == .id(bob.id))
        #expect(events.first?.fields["at"]?.stringValue.flatMap(RFC3339.parse) != nil)
        #expect(events.last?.fields["userId"] == .id(bob.id))

        let unknown = await rpcError { _ = try await stack.like(EntityID(424_242), by: bob) }
        #expect(unknown?.reason == "not_found")
    }

    @Test("a storm of concurrent likes and repeats counts exactly, and so do the unlikes")
    func storm() async throws {
        let stack = try await TweetsStack.shared()
        let author = try await stack.makeUser("storm")
        let likers = try await stack.makeUsers(24, "fan")
        let tweet = try await stack.tweet(author, "popular")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for liker in likers {
                for _ in 0..<3 { group.addTask { _ = try await stack.like(tweet.id, by: liker) } }
            }
            try await group.waitForAll()
        }
        #expect(try await stack.getTweet(tweet.id).likes == Int64(likers.count))
        let stored = try await stack.database.query("SELECT count(*) FROM tweets.likes WHERE tweet_id = $1", [tweet.id.value])
        #expect(try stored[0].decode(Int64.self, at: 0) == Int64(likers.count))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for liker in likers.prefix(10) {
                for _ in 0..<2 { group.addTask { _ = try await stack.like(tweet.id, by: liker, false) } }
            }
            try await group.waitForAll()
        }
        #expect(try await stack.getTweet(tweet.id).likes == Int64(likers.count - 10))
    }

    /// A double tap: the like holds the tweet's row while the unlike waits for it. The unlike must
    /// then find the like's row and undo it, not answer likedByMe false while the like stays.
    @Test("an unlike that waited for the same user's like undoes it")
    func unlikeAfterAWaitedForLike() async throws {
        let stack = try await TweetsStack.shared()
        let (author, fan) = (try await stack.makeUser("tapped"), try await stack.makeUser("tapper"))
        let tweet = try await stack.tweet(author, "double tap")
        // The like, as its statement does it, in a transaction the test holds open.
        let unliking = try await holdingTransaction(
            """
            WITH liked AS (INSERT INTO tweets.likes (tweet_id, user_id) VALUES ($1, $2) RETURNING tweet_id)
            UPDATE tweets.tweets SET likes = likes + 1 WHERE id = (SELECT tweet_id FROM liked)
            """, [tweet.id.value, fan.id.value], on: stack.database
        ) {
            let unliking = Task { try await stack.like(tweet.id, by: fan, false) }
            try await Task.sleep(for: .milliseconds(300))  // waiting on the tweet's row
            return unliking
        }
        let state = try await unliking.value
        #expect(state.likes == 0 && state.likedByMe == false)
        let stored = try await stack.database.query("SELECT count(*) FROM tweets.likes WHERE tweet_id = $1", [tweet.id.value])
        #expect(try stored[0].decode(Int64.self, at: 0) == 0)
        #expect(try await stack.getTweet(tweet.id).likes == 0)
    }
}
