import AviaryAPI
import AviaryJSON
import EventStreams
import RPC
import TestSupport
import Testing

@Suite("authors' tweet counts held by each instance")
struct CountTests {
    private struct Stats: Decodable {
        var userId: EntityID
        var tweets: Int64
    }

    @Test("a create and a delete show in the author's profile at once, and soon on another instance that holds the count")
    func changesReachEveryCopy() async throws {
        let stack = try await TweetsStack.shared()
        let (extra, client) = try await stack.extraTweets()
        defer { extra.kill() }
        defer { Task { await client.shutdown() } }
        let (alice, bob) = (try await stack.makeUser("prolific"), try await stack.makeUser("reader"))
        func countOnExtra() async throws -> Int64 {
            let stats = try await client.call(
                "tweets.statsMany", params: ["ids": JSONValue.ids([alice.id])], meta: RequestMeta(service: stack.serviceCredential),
                as: [Stats].self)
            return stats.first?.tweets ?? -1
        }
        func profileCount() async throws -> Int64 {
            try await stack.call("auth", "auth.getUser", ["userId": .id(alice.id)], as: bob, decoding: User.self).stats.tweets
        }
        let first = try await stack.tweet(alice, "one")
        // Until the extra instance answers from its own copy (its subscription is up by then).
        try await poll {
            try await countOnExtra() == 1 && extra.metric(#"aviary_tweets_local_counts_total{result="hit"}"#) > 0
        }
        #expect(try await profileCount() == 1)

        // While the outbox relays are held back, only the instance that took the tweet knows of it.
        try await holdingAdvisoryLock(OutboxRelay.lockKey(schema: "tweets"), on: stack.database) {
            _ = try await stack.tweet(alice, "two")
            #expect(try await profileCount() == 2)
            #expect(try await countOnExtra() == 1)
        }
        // The relay announces it with the event: well inside the 10 s a held count would otherwise live.
        let soon = Duration.seconds(2)
        try await poll(timeout: soon) { try await countOnExtra() == 2 }
        _ = try await stack.call("tweets", "tweets.delete", ["tweetId": .id(first.id)], as: alice, decoding: JSONValue.self)
        #expect(try await profileCount() == 1)
        try await poll(timeout: soon) { try await countOnExtra() == 1 }
    }
}
