import AviaryAPI
import AviaryJSON
import EventStreams
import Postgres
import RPC
import TestSupport
import Testing

@Suite("tweet states held by each instance")
struct StateTests {
    @Test("a like, an unlike, a reply and a delete show at once on the instance that took them and to their writer on another that holds the tweet's state, and soon to everyone there")
    func changesReachEveryCopy() async throws {
        let stack = try await TweetsStack.shared()
        let (extra, client) = try await stack.extraTweets()
        defer { extra.kill() }
        defer { Task { await client.shutdown() } }
        let (alice, bob) = (try await stack.makeUser("held"), try await stack.makeUser("holder"))
        let tweet = try await stack.tweet(alice, "counted everywhere")
        func readOnExtra(as user: StackUser) async throws -> Tweet { try await stack.getTweet(tweet.id, as: user, on: client) }
        // Until the extra instance answers from its own copy (its subscription is up by then).
        try await poll { _ = try await readOnExtra(as: bob); return try extra.metric(#"aviary_tweets_local_states_total{result="hit"}"#) > 0 }
        _ = try await stack.getTweet(tweet.id, as: bob)

        // While the outbox relays are held back, only the instance that took the like knows of it;
        // the liker is shown it everywhere, skipping the other's copy (and refreshing it).
        try await holdingAdvisoryLock(OutboxRelay.lockKey(schema: "tweets"), on: stack.database) {
            _ = try await stack.like(tweet.id, by: bob)
            let mine = try await stack.getTweet(tweet.id, as: bob)
            #expect(mine.likes == 1 && mine.likedByMe)
            #expect(try await readOnExtra(as: alice).likes == 0)
            let mineThere = try await readOnExtra(as: bob)
            #expect(mineThere.likes == 1 && mineThere.likedByMe)
        }
        // The relay announces it with the event: well inside the 10 s a held state would otherwise live.
        let soon = Duration.seconds(2)
        try await poll(timeout: soon) {
            let (theirs, others) = (try await readOnExtra(as: bob), try await readOnExtra(as: alice))
            return theirs.likes == 1 && theirs.likedByMe && others.likes == 1 && !others.likedByMe
        }
        _ = try await stack.like(tweet.id, by: bob, false)
        try await poll(timeout: soon) { let theirs = try await readOnExtra(as: bob); return theirs.likes == 0 && !theirs.likedByMe }
        _ = try await stack.tweet(bob, "a reply", replyTo: tweet.id)
        try await poll(timeout: soon) { try await readOnExtra(as: alice).replies == 1 }
        _ = try await stack.call("tweets", "tweets.delete", ["tweetId": .id(tweet.id)], as: alice, decoding: JSONValue.self)
        try await poll(timeout: soon) { let gone = try await readOnExtra(as: bob); return gone.deleted && gone.text == nil }
    }

    @Test("likedByMe holds for a tweet liked by more users than a state lists, as for one liked by a few")
    func widelyLiked() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob) = (try await stack.makeUser("popular"), try await stack.makeUser("fan"))
        let popular = try await stack.tweet(alice, "liked by many")
        let quiet = try await stack.tweet(alice, "liked by a few")
        // Likes of users who are not in this test, written as a like would write them.
        _ = try await stack.database.query(
            "INSERT INTO tweets.likes (tweet_id, user_id) SELECT $1, -g FROM generate_series(1, 60) AS g", [popular.id.value])
        _ = try await stack.database.query("UPDATE tweets.tweets SET likes = likes + 60 WHERE id = $1", [popular.id.value])
        _ = try await stack.like(popular.id, by: bob)
        _ = try await stack.like(quiet.id, by: bob)
        // Twice each: the second read finds the state held.
        for _ in 0..<2 {
            let tweets = try await stack.callInternal(
                "tweets", "tweets.getMany", ["ids": .ids([popular.id, quiet.id]), "viewerId": .id(bob.id)], decoding: [Tweet].self)
            #expect(tweets.map(\.likes) == [61, 1])
            #expect(tweets.map(\.likedByMe) == [true, true])
            let others = try await stack.callInternal(
                "tweets", "tweets.getMany", ["ids": .ids([popular.id, quiet.id]), "viewerId": .id(alice.id)], decoding: [Tweet].self)
            #expect(others.map(\.likedByMe) == [false, false])
            let anonymous = try await stack.callInternal(
                "tweets", "tweets.getMany", ["ids": .ids([popular.id, quiet.id])], decoding: [Tweet].self)
            #expect(anonymous.map(\.likedByMe) == [false, false])
        }
    }
}
