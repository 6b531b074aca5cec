import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import Redis
import TestSupport
import Testing

@Suite("tweets.create and tweets.get")
struct CreateTests {
    @Test("a tweet comes back whole: trimmed text, author, mentions of real users, hashtags, zero counts")
    func createAndGet() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob) = (try await stack.makeUser("alice"), try await stack.makeUser("bob"))
        let tweet = try await stack.tweet(alice, "  Hello @\(bob.username.uppercased()) and @nobody_here_x #Swift #swift #día!  \n")

        #expect(tweet.text == "Hello @\(bob.username.uppercased()) and @nobody_here_x #Swift #swift #día!")
        #expect(tweet.author.id == alice.id)
        #expect(tweet.author.username == alice.username)
        #expect(tweet.mentions.map(\.id) == [bob.id])
        #expect(tweet.hashtags == ["swift", "día"])
        #expect(tweet.likes == 0 && tweet.replies == 0 && !tweet.likedByMe && !tweet.deleted)
        #expect(tweet.replyTo == nil && tweet.replyToUser == nil && tweet.media.isEmpty)
        #expect(abs(tweet.createdAt.timeIntervalSinceNow) < 60)

        let fetched = try await stack.getTweet(tweet.id)
        #expect(fetched == tweet)
        // Again, now from the cache.
        #expect(try await stack.getTweet(tweet.id, as: bob) == tweet)
    }

    @Test("names nobody has do not crowd out real mentions; a tweet mentions the first 10 users that exist")
    func mentionLimit() async throws {
        let stack = try await TweetsStack.shared()
        let author = try await stack.makeUser("ment")
        let named = try await stack.makeUsers(11, "m")
        let nobodies = (1...10).map { String(format: "@q%02d", $0) }.joined(separator: " ")
        let text = nobodies + " " + named.map { "@" + $0.username }.joined(separator: " ")
        #expect(text.count <= 280)
        let tweet = try await stack.tweet(author, text)
        #expect(tweet.mentions.map(\.id) == named.prefix(10).map(\.id))
    }

    @Test("the wire form writes null for absent values")
    func wireForm() async throws {
        let stack = try await TweetsStack.shared()
        let alice = try await stack.makeUser("wire")
        let tweet = try await stack.tweet(alice, "plain")
        let raw = try await stack.call("tweets", "tweets.get", ["tweetId": .id(tweet.id)], decoding: JSONValue.self)
        #expect(raw["replyTo"] == .null)
        #expect(raw["replyToUser"] == .null)
        #expect(raw["id"] == .string(tweet.id.description))
        #expect(raw["createdAt"]?.stringValue?.hasSuffix("Z") == true)
    }

    @Test("SQL- and JSON-hostile text round-trips exactly", arguments: [
        "'; DROP TABLE tweets.tweets; --",
        "quote \" backslash \\ slash / tab \t newline \n end",
        "emoji 👩‍👩‍👧‍👦 and RTL \u{202E}txet and zero width \u{200B}",
        "<script>alert(1)</script> %s %n {{x}} $1 \\x00",
    ])
    func hostileText(text: String) async throws {
        let stack = try await TweetsStack.shared()
        let alice = try await stack.makeUser("hostile")
        let tweet = try await stack.tweet(alice, text)
        #expect(tweet.text == text)
        #expect(try await stack.getTweet(tweet.id).text == text)
    }

    @Test("280 Unicode scalars are allowed, 281 and empty or invisible text are validation errors naming text")
    func textLength() async throws {
        let stack = try await TweetsStack.shared()
        let alice = try await stack.makeUser("length")
        let longest = String(repeating: "é", count: 280)
        #expect(try await stack.tweet(alice, longest).text == longest)
        for text in [String(repeating: "a", count: 281), "", "   \n\t ", "\u{200B}", " \u{200D}\u{2060}\u{FEFF} \u{202E}"] {
            let error = await rpcError { _ = try await stack.tweet(alice, text) }
            #expect(error?.reason == "validation", "\(Array(text.unicodeScalars))")
            #expect(error?.field == "text")
        }
        // Visible text with invisible characters in it is kept as it is.
        #expect(try await stack.tweet(alice, "a\u{200B}b").text == "a\u{200B}b")
    }

    @Test("a link counts as 23 characters whatever its length; AVIARY_TWEETS_MAX_LENGTH sets the limit")
    func linkWeightAndConfiguredLimit() async throws {
        let stack = try await TweetsStack.shared()
        let alice = try await stack.makeUser("links")
        let link = "https://example.com/" + String(repeating: "p", count: 100)
        // 256 + 1 + 23 = 280 as counted, 377 as written.
        let fits = String(repeating: "a", count: 256) + " " + link
        #expect(try await stack.tweet(alice, fits).text == fits)
        let error = await rpcError { _ = try await stack.tweet(alice, "b" + fits) }
        #expect(error?.field == "text" && error?.message.contains("got 281") == true, "\(String(describing: error))")
        // Past four times the limit as written, long links do not help.
        let links = Array(repeating: link, count: 10).joined(separator: " ")
        #expect(await rpcError { _ = try await stack.tweet(alice, links) }?.field == "text")

        // DeathStarBench's posts: 256 characters, six mentions and six links of 64.
        let (longer, client) = try await stack.extraTweets(environment: ["AVIARY_TWEETS_MAX_LENGTH": "600"])
        defer { longer.kill() }
        let post = String(repeating: "c", count: 256) + String(repeating: " @\(alice.username)", count: 6)
            + String(repeating: " http://" + String(repeating: "u", count: 57), count: 6)
        let created = try await client.call(
            "tweets.create", params: ["text": JSONValue.string(post)], meta: RequestMeta(token: alice.token), as: Tweet.self)
        #expect(created.text == post)
        #expect(await rpcError { _ = try await stack.tweet(alice, post) }?.field == "text")
    }

    @Test("media: more than four, repeated ids and malformed ids are refused before any call; an unreachable media service is unavailable")
    func media() async throws {
        let stack = try await TweetsStack.shared()
        let alice = try await stack.makeUser("media")
        let five = await rpcError { _ = try await stack.tweet(alice, "x", mediaIds: ["1", "2", "3", "4", "5"]) }
        #expect(five?.reason == "validation")
        #expect(five?.field == "mediaIds")
        let repeated = await rpcError { _ = try await stack.tweet(alice, "x", mediaIds: ["7", "7"]) }
        #expect(repeated?.field == "mediaIds")
        let malformed = await rpcError { _ = try await stack.tweet(alice, "x", mediaIds: ["12a"]) }
        #expect(malformed?.reason == "validation")
        #expect(malformed?.field == "mediaIds[0]")
        let down = await rpcError { _ = try await stack.tweet(alice, "x", mediaIds: ["42"]) }
        #expect(down?.reason == "unavailable")
    }

    @Test("with auth unreachable a create fails before it stores anything, so a retry cannot post twice")
    func authDownStoresNothing() async throws {
        let stack = try await TweetsStack.shared()
        let (process, client) = try await stack.extraTweets(environment: ["AVIARY_AUTH_ADDRESSES": "127.0.0.1:\(try freePort())"])
        defer { Task { await client.shutdown(); process.kill() } }
        let alice = try await stack.makeUser("noauth")
        let failure = await rpcError {
            _ = try await client.call(
                "tweets.create", params: ["text": JSONValue.string("not yet")], meta: RequestMeta(token: alice.token),
                as: Tweet.self)
        }
        #expect(failure?.reason == "unavailable")
        let stored = try await stack.database.query("SELECT count(*) FROM tweets.tweets WHERE author_id = $1", [alice.id.value])
        #expect(try stored.first?.decode(Int64.self, at: 0) == 0)
    }

    @Test("replies: an unknown or malformed target is refused; a reply names its parent's author and counts on the parent")
    func replies() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob) = (try await stack.makeUser("parent"), try await stack.makeUser("replier"))
        let unknown = await rpcError { _ = try await stack.tweet(bob, "hi", replyTo: EntityID(999_999_999)) }
        #expect(unknown?.reason == "not_found")
        let malformed = await rpcError {
            _ = try await stack.call("tweets", "tweets.create", ["text": "hi", "replyTo": "abc"], as: bob, decoding: Tweet.self)
        }
        #expect(malformed?.reason == "validation")
        #expect(malformed?.field == "replyTo")

        let since = Date()
        let parent = try await stack.tweet(alice, "parent")
        let reply = try await stack.tweet(bob, "reply to @\(alice.username)", replyTo: parent.id)
        #expect(reply.replyTo == parent.id)
        #expect(reply.replyToUser?.id == alice.id)
        #expect(try await stack.getTweet(parent.id).replies == 1)

        let events = try await stack.tweetEvents(of: reply.id, since: since)
        #expect(events.map(\.type) == ["created"])
        let fields = events.first?.fields ?? [:]
        #expect(fields["authorId"] == .id(bob.id))
        #expect(fields["replyTo"] == .id(parent.id))
        #expect(fields["replyToAuthorId"] == .id(alice.id))
        #expect(fields["mentionIds"] == .ids([alice.id]))
        #expect(fields["createdAt"]?.stringValue.flatMap(RFC3339.parse) != nil)
    }

    @Test("a mention event lists the mentioned users but not the author")
    func mentionEvent() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob, carol) = (try await stack.makeUser("m1"), try await stack.makeUser("m2"), try await stack.makeUser("m3"))
        let since = Date()
        let tweet = try await stack.tweet(alice, "@\(carol.username) @\(alice.username) meet @\(bob.username)")
        #expect(tweet.mentions.map(\.id) == [carol.id, alice.id, bob.id])
        let fields = try await stack.tweetEvents(of: tweet.id, since: since).first?.fields ?? [:]
        #expect(fields["mentionIds"] == .ids([carol.id, bob.id]))
        #expect(fields["replyTo"] == .null)
    }

    @Test("the same idempotencyKey from the same author makes one tweet, even when sent at once; another author's is separate")
    func idempotency() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob) = (try await stack.makeUser("idem"), try await stack.makeUser("idem2"))
        let since = Date()
        let ids = try await withThrowingTaskGroup(of: EntityID.self) { group in
            for _ in 0..<8 { group.addTask { try await stack.tweet(alice, "once", key: "key-1").id } }
            return try await group.reduce(into: Set<EntityID>()) { $0.insert($1) }
        }
        #expect(ids.count == 1)
        let again = try await stack.tweet(alice, "different text", key: "key-1")
        #expect(Set([again.id]) == ids)
        #expect(again.text == "once")
        let other = try await stack.tweet(bob, "once", key: "key-1")
        #expect(!ids.contains(other.id))
        let rows = try await stack.database.query("SELECT count(*) FROM tweets.tweets WHERE author_id = $1", [alice.id.value])
        #expect(try rows[0].decode(Int64.self, at: 0) == 1)
        #expect(try await stack.tweetEvents(of: again.id, since: since).count == 1)
        let long = await rpcError { _ = try await stack.tweet(alice, "x", key: String(repeating: "k", count: 101)) }
        #expect(long?.field == "idempotencyKey")
    }

    @Test("acting methods need a token; malformed ids are validation errors")
    func refusals() async throws {
        let stack = try await TweetsStack.shared()
        for method in ["tweets.create", "tweets.delete", "tweets.like", "tweets.unlike"] {
            let error = await rpcError {
                _ = try await stack.call("tweets", method, ["text": "x", "tweetId": "1"], decoding: JSONValue.self)
            }
            #expect(error?.reason == "unauthenticated", "\(method)")
        }
        let malformed = await rpcError { _ = try await stack.call("tweets", "tweets.get", ["tweetId": "-5"], decoding: JSONValue.self) }
        #expect(malformed?.reason == "validation")
        #expect(malformed?.field == "tweetId")
        let unknown = await rpcError { _ = try await stack.getTweet(EntityID(123_456_789)) }
        #expect(unknown?.reason == "not_found")
    }
}
