import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import Redis
import TestSupport
import Testing

@Suite("internal methods and the tweet cache")
struct InternalTests {
    @Test("internal methods refuse callers without the service credential, users included")
    func refusals() async throws {
        let stack = try await TweetsStack.shared()
        let alice = try await stack.makeUser("intruder")
        for method in ["tweets.getMany", "tweets.recentIds", "tweets.statsMany"] {
            for user in [nil, alice] {
                let error = await rpcError {
                    _ = try await stack.call(
                        "tweets", method, ["ids": .ids([alice.id]), "authorIds": .ids([alice.id]), "limit": 5], as: user,
                        decoding: JSONValue.self)
                }
                #expect(error?.reason == "forbidden", "\(method)")
            }
        }
    }

    @Test("getMany answers in the order asked, each tweet once, leaves unknown ids out and hydrates likedByMe for viewerId")
    func getMany() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob) = (try await stack.makeUser("many1"), try await stack.makeUser("many2"))
        let one = try await stack.tweet(alice, "one @\(bob.username)")
        let two = try await stack.tweet(bob, "two")
        _ = try await stack.like(one.id, by: bob)
        let result = try await stack.callInternal(
            "tweets", "tweets.getMany", ["ids": .ids([two.id, EntityID(31_337), one.id, two.id]), "viewerId": .id(bob.id)],
            decoding: [Tweet].self)
        #expect(result.map(\.id) == [two.id, one.id])
        #expect(result.map(\.likedByMe) == [false, true])
        #expect(result[1].mentions.map(\.id) == [bob.id])
        #expect(result[1].likes == 1)
        let tooMany = await rpcError {
            _ = try await stack.callInternal(
                "tweets", "tweets.getMany", ["ids": .array((1...1001).map { .string(String($0)) })], decoding: [Tweet].self)
        }
        #expect(tooMany?.field == "ids")
    }

    @Test("recentIds merges authors newest first, honours before and limit; statsMany counts live tweets")
    func recentAndStats() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob, carol) = (try await stack.makeUser("rec1"), try await stack.makeUser("rec2"), try await stack.makeUser("rec3"))
        var made: [(EntityID, EntityID)] = []
        for index in 0..<6 {
            let author = index.isMultiple(of: 2) ? alice : bob
            made.append((try await stack.tweet(author, "n\(index)").id, author.id))
        }
        _ = try await stack.tweet(carol, "not asked")
        struct Recent: Decodable, Equatable {
            var id: EntityID
            var authorId: EntityID
        }
        let all = try await stack.callInternal(
            "tweets", "tweets.recentIds", ["authorIds": .ids([alice.id, bob.id]), "limit": 10], decoding: [Recent].self)
        #expect(all == made.reversed().map { Recent(id: $0.0, authorId: $0.1) })
        let older = try await stack.callInternal(
            "tweets", "tweets.recentIds", ["authorIds": .ids([alice.id, bob.id]), "limit": 2, "before": .id(made[3].0)],
            decoding: [Recent].self)
        #expect(older.map(\.id) == [made[2].0, made[1].0])
        let badLimit = await rpcError {
            _ = try await stack.callInternal("tweets", "tweets.recentIds", ["authorIds": .ids([alice.id]), "limit": 801], decoding: [Recent].self)
        }
        #expect(badLimit?.field == "limit")

        _ = try await stack.call("tweets", "tweets.delete", ["tweetId": .id(made[0].0)], as: alice, decoding: JSONValue.self)
        struct Stats: Decodable, Equatable {
            var userId: EntityID
            var tweets: Int64
        }
        let stats = try await stack.callInternal(
            "tweets", "tweets.statsMany", ["ids": .ids([alice.id, bob.id, EntityID(5)])], decoding: [Stats].self)
        #expect(stats == [Stats(userId: alice.id, tweets: 2), Stats(userId: bob.id, tweets: 3), Stats(userId: EntityID(5), tweets: 0)])
    }

    @Test("statsMany counts exactly up to 1,000 tweets, and shares a larger count through Redis for a few seconds")
    func prolificAuthorCount() async throws {
        let stack = try await TweetsStack.shared()
        struct Stats: Decodable {
            var userId: EntityID
            var tweets: Int64
        }
        func count(_ author: Int64) async throws -> Int64? {
            let stats = try await stack.callInternal(
                "tweets", "tweets.statsMany", ["ids": .ids([EntityID(author)])], decoding: [Stats].self)
            return stats.first?.tweets
        }
        /// What a create announces: the service's copy of the author's count is dropped a moment later.
        func announce(_ author: Int64) async throws {
            let channel = "aviary:tweets:forget-counts:\(stack.redis.configuration.database)"
            _ = try await stack.redis.send(["PUBLISH", RedisArgument(channel), RedisArgument(String(author))])
        }
        /// Tweets written and announced as creates would write and announce them.
        func post(_ count: Int, as author: Int64, from first: Int) async throws {
            try await stack.database.execute(
                "INSERT INTO tweets.tweets (id, author_id, text) SELECT $1 * 10000 + g, $1, 'bulk' FROM generate_series($2::int, $3::int) AS g",
                [author, Int64(first), Int64(first + count - 1)])
            try await announce(author)
        }
        let (prolific, modest) = (Int64.random(in: 100_000...400_000), Int64.random(in: 500_000...900_000))
        try await post(1_300, as: prolific, from: 1)
        try await stack.database.execute(
            "UPDATE tweets.tweets SET deleted_at = now(), text = NULL WHERE author_id = $1 AND id % 13 = 0", [prolific])
        try await post(1_000, as: modest, from: 1)
        let key = "aviary:tweets:count:\(prolific)"
        _ = try await stack.redis.send(["DEL", RedisArgument(key)])

        #expect(try await count(prolific) == 1_200)
        #expect(try await count(modest) == 1_000)
        let ttl = try await stack.redis.send(["TTL", RedisArgument(key)]).int
        #expect(ttl.map { (1...10).contains($0) } == true)
        #expect(try await stack.redis.send(["EXISTS", RedisArgument("aviary:tweets:count:\(modest)")]).int == 0)

        // Within those seconds the shared count stands; once it is gone, the next view counts again.
        // Announcements arrive in order: once the second is heard, so was the first.
        try await post(5, as: prolific, from: 2_000)
        try await post(1, as: modest, from: 2_000)
        try await poll { try await count(modest) == 1_001 }
        #expect(try await count(prolific) == 1_200)
        _ = try await stack.redis.send(["DEL", RedisArgument(key)])
        try await announce(prolific)
        try await poll { try await count(prolific) == 1_205 }
    }

    @Test("reads fill the cache; a users/updated event makes tweets show the new profile")
    func profileChange() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob) = (try await stack.makeUser("profile"), try await stack.makeUser("profile2"))
        let tweet = try await stack.tweet(alice, "before the rename")
        let mention = try await stack.tweet(bob, "hi @\(alice.username)")
        _ = try await stack.getTweet(tweet.id)
        _ = try await stack.getTweet(mention.id)
        try await poll { try await stack.redis.send(["EXISTS", RedisArgument("aviary:tweets:body:\(tweet.id)")]).int == 1 }

        _ = try await stack.call("auth", "auth.updateProfile", ["fullname": "Renamed Alice"], as: alice, decoding: JSONValue.self)
        // The event as auth's outbox relay writes it (it may also write its own; consumers are idempotent).
        _ = try await stack.redis.send([
            "XADD", "aviary:events:users", "*", "type", "updated", "payload", RedisArgument("{\"userId\":\"\(alice.id)\"}"),
            "outbox_id", RedisArgument(Int64.random(in: 1...Int64.max)), "source", "tests",
        ])
        try await poll { try await stack.getTweet(tweet.id).author.fullname == "Renamed Alice" }
        try await poll { try await stack.getTweet(mention.id).mentions.first?.fullname == "Renamed Alice" }
    }

    @Test("a profile change reaches every tweet showing the user, 5,005 of them")
    func profileChangeOfAProlificUser() async throws {
        let stack = try await TweetsStack.shared()
        let erin = try await stack.makeUser("prolific")
        let base: Int64 = (1 << 60) + (Int64.random(in: 0..<(1 << 30)) << 16)
        try await stack.database.execute(
            "INSERT INTO tweets.tweets (id, author_id, text) SELECT $1 + n, $2, 'tweet ' || n FROM generate_series(0, 5004) AS n",
            [base, erin.id.value])
        let (first, last) = (EntityID(base), EntityID(base + 5004))
        for id in [first, last] { _ = try await stack.getTweet(id) }
        try await poll { try await stack.redis.send(["EXISTS", RedisArgument("aviary:tweets:body:\(last)")]).int == 1 }

        _ = try await stack.call("auth", "auth.updateProfile", ["fullname": "Renamed Erin"], as: erin, decoding: JSONValue.self)
        _ = try await stack.redis.send([
            "XADD", "aviary:events:users", "*", "type", "updated", "payload", RedisArgument("{\"userId\":\"\(erin.id)\"}"),
            "outbox_id", RedisArgument(Int64.random(in: 1...Int64.max)), "source", "tests",
        ])
        for id in [first, last] { try await poll { try await stack.getTweet(id).author.fullname == "Renamed Erin" } }
    }
}

extension InternalTests {
    @Test("an instance keeps up to its limit of the bodies it read, and a profile change reaches every instance's copy")
    func localBodiesOnEveryInstance() async throws {
        let stack = try await TweetsStack.shared()
        let (extra, client) = try await stack.extraTweets(environment: ["AVIARY_TWEETS_LOCAL_BODIES": "4"])
        defer { extra.kill() }
        defer { Task { await client.shutdown() } }
        let carol = try await stack.makeUser("local")
        let tweet = try await stack.tweet(carol, "read on another instance")
        func readOnExtra(_ id: EntityID = tweet.id) async throws -> Tweet { try await stack.getTweet(id, on: client) }
        // Until the extra instance answers from its own copy (its subscription is up by then).
        try await poll { _ = try await readOnExtra(); return try extra.metric(#"aviary_tweets_local_bodies_total{result="hit"}"#) > 0 }
        for index in 0..<10 { _ = try await readOnExtra(try await stack.tweet(carol, "one of many \(index)").id) }
        #expect(try extra.metric("aviary_tweets_local_bodies ") <= 4)

        _ = try await stack.call("auth", "auth.updateProfile", ["fullname": "Renamed Carol"], as: carol, decoding: JSONValue.self)
        _ = try await stack.redis.send([
            "XADD", "aviary:events:users", "*", "type", "updated", "payload", RedisArgument("{\"userId\":\"\(carol.id)\"}"),
            "outbox_id", RedisArgument(Int64.random(in: 1...Int64.max)), "source", "tests",
        ])
        // Within the poll's 15 s, well inside the 30 s a held body would otherwise live.
        try await poll { try await readOnExtra().author.fullname == "Renamed Carol" }
    }

    @Test("a tweet posted right after its author's profile change shows the new name")
    func authorSummaryAfterRename() async throws {
        let stack = try await TweetsStack.shared()
        let dave = try await stack.makeUser("author")
        // Until posts take their author's summary from the instance's own copy.
        try await poll {
            _ = try await stack.tweet(dave, "warming up")
            return try stack.process("tweets").metric(#"aviary_tweets_local_users_total{result="hit"}"#) > 0
        }
        _ = try await stack.tweet(dave, "with the copy's summary")

        _ = try await stack.call("auth", "auth.updateProfile", ["fullname": "Renamed Dave"], as: dave, decoding: JSONValue.self)
        _ = try await stack.redis.send([
            "XADD", "aviary:events:users", "*", "type", "updated", "payload", RedisArgument("{\"userId\":\"\(dave.id)\"}"),
            "outbox_id", RedisArgument(Int64.random(in: 1...Int64.max)), "source", "tests",
        ])
        // Within the poll's 15 s, well inside the 60 s a held summary would otherwise live.
        try await poll { try await stack.tweet(dave, "after the rename").author.fullname == "Renamed Dave" }
    }
}

/// Waits until `condition` holds, for at most `timeout`.
func poll(timeout: Duration = .seconds(15), _ condition: () async throws -> Bool) async throws {
    let held = try await eventually(timeout: timeout, interval: .milliseconds(50), condition)
    #expect(held, "condition did not hold within \(timeout)")
}
