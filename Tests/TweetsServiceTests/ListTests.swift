import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import Redis
import TestSupport
import Testing

@Suite("tweets.replies, tweets.byUser, tweets.likedBy, tweets.search and tweets.latest")
struct ListTests {
    /// Every page of `method` with `params`, following the cursors.
    func allPages(_ stack: ServiceStack, _ method: String, _ params: [String: JSONValue], limit: Int) async throws -> [Tweet] {
        var items: [Tweet] = []
        var cursor: String?
        repeat {
            var page = params
            page["limit"] = .int(Int64(limit))
            if let cursor { page["cursor"] = .string(cursor) }
            let result = try await stack.call("tweets", method, page, decoding: TweetPage.self)
            #expect(result.items.count <= limit)
            items += result.items
            cursor = result.nextCursor
        } while cursor != nil
        return items
    }

    /// A page whose tweets name more users than auth.getUsers takes at once (1,000) is hydrated in
    /// several calls, not refused: 100 tweets mentioning 11 users each name 1,101 users.
    @Test("a page naming more than 1,000 users is hydrated whole")
    func pageNamingManyUsers() async throws {
        let stack = try await TweetsStack.shared()
        let author = try await stack.makeUser("crowd")
        let base: Int64 = (1 << 60) + (Int64.random(in: 0..<(1 << 40)) << 12)
        try await stack.database.execute(
            """
            INSERT INTO auth.users (id, email, username, fullname)
            SELECT $1 + n, 'crowd' || ($1 + n) || '@crowd.example', 'c' || to_hex($1 + n), 'Crowd ' || n FROM generate_series(0, 1099) AS n
            """, [base])
        // Rows as tweets.create stores them, never hydrated (so never cached): the page's first read builds them all.
        try await stack.database.execute(
            """
            INSERT INTO tweets.tweets (id, author_id, text, mention_ids)
            SELECT $1 + t, $2, 'mentions ' || t, ARRAY(SELECT $1 + t * 11 + m FROM generate_series(0, 10) AS m)
            FROM generate_series(0, 99) AS t
            """, [base, author.id.value])
        let page = try await stack.call(
            "tweets", "tweets.byUser", ["userId": .id(author.id), "limit": 100], decoding: TweetPage.self)
        #expect(page.items.count == 100)
        let mentioned: Set<Int64> = Set(page.items.flatMap { $0.mentions.map(\.id.value) })
        let inserted: Set<Int64> = Set((Int64(0)..<1100).map { base + $0 })
        #expect(mentioned == inserted)
        #expect(page.items.allSatisfy { $0.author.id == author.id && $0.mentions.count == 11 })
    }

    @Test("replies come oldest first across pages; an unknown tweet is not_found")
    func replies() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob) = (try await stack.makeUser("thread"), try await stack.makeUser("thread2"))
        let root = try await stack.tweet(alice, "root")
        var made: [EntityID] = []
        for index in 0..<5 { made.append(try await stack.tweet(index.isMultiple(of: 2) ? bob : alice, "r\(index)", replyTo: root.id).id) }
        let listed = try await allPages(stack, "tweets.replies", ["tweetId": .id(root.id)], limit: 2)
        #expect(listed.map(\.id) == made)
        let unknown = await rpcError {
            _ = try await stack.call("tweets", "tweets.replies", ["tweetId": "5555"], decoding: TweetPage.self)
        }
        #expect(unknown?.reason == "not_found")
    }

    @Test("byUser lists newest first, replies only when asked; an unknown user is not_found; a forged cursor is refused")
    func byUser() async throws {
        let stack = try await TweetsStack.shared()
        let alice = try await stack.makeUser("byuser")
        let first = try await stack.tweet(alice, "one")
        let reply = try await stack.tweet(alice, "two", replyTo: first.id)
        let third = try await stack.tweet(alice, "three")
        #expect(try await allPages(stack, "tweets.byUser", ["userId": .id(alice.id)], limit: 1).map(\.id) == [third.id, first.id])
        #expect(
            try await allPages(stack, "tweets.byUser", ["userId": .id(alice.id), "includeReplies": true], limit: 2).map(\.id)
                == [third.id, reply.id, first.id])
        let unknown = await rpcError {
            _ = try await stack.call("tweets", "tweets.byUser", ["userId": "77777"], decoding: TweetPage.self)
        }
        #expect(unknown?.reason == "not_found")
        let forged = await rpcError {
            _ = try await stack.call("tweets", "tweets.byUser", ["userId": .id(alice.id), "cursor": "nonsense!"], decoding: TweetPage.self)
        }
        #expect(forged?.field == "cursor")
        let limit = await rpcError {
            _ = try await stack.call("tweets", "tweets.byUser", ["userId": .id(alice.id), "limit": 101], decoding: TweetPage.self)
        }
        #expect(limit?.field == "limit")
    }

    @Test("likedBy lists the most recent like first across pages")
    func likedBy() async throws {
        let stack = try await TweetsStack.shared()
        let (alice, bob) = (try await stack.makeUser("likes1"), try await stack.makeUser("likes2"))
        var tweets: [Tweet] = []
        for index in 0..<3 { tweets.append(try await stack.tweet(alice, "t\(index)")) }
        for tweet in tweets.reversed() { _ = try await stack.like(tweet.id, by: bob) }
        let listed = try await allPages(stack, "tweets.likedBy", ["userId": .id(bob.id)], limit: 2)
        #expect(listed.map(\.id) == tweets.map(\.id))
    }

    @Test("likers lists a tweet's likers by user id across pages; an unknown or deleted tweet is not found")
    func likers() async throws {
        let stack = try await TweetsStack.shared()
        let author = try await stack.makeUser("liked")
        var fans: [StackUser] = []
        for index in 0..<3 { fans.append(try await stack.makeUser("fan\(index)")) }
        let tweet = try await stack.tweet(author, "like me")
        for fan in fans { _ = try await stack.like(tweet.id, by: fan) }
        var listed: [UserSummary] = []
        var cursor: String?
        repeat {
            var params: [String: JSONValue] = ["tweetId": .id(tweet.id), "limit": 2]
            if let cursor { params["cursor"] = .string(cursor) }
            let page = try await stack.call("tweets", "tweets.likers", params, decoding: Page<UserSummary>.self)
            listed += page.items
            cursor = page.nextCursor
        } while cursor != nil
        #expect(listed.map(\.id) == fans.map(\.id).sorted(by: >) && listed.first?.username.isEmpty == false)
        let unknown = await rpcError {
            _ = try await stack.call("tweets", "tweets.likers", ["tweetId": "123"], decoding: Page<UserSummary>.self)
        }
        #expect(unknown?.reason == "not_found")
    }

    @Test("search finds every word and hashtag, newest first, across pages; a query of nothing is refused")
    func search() async throws {
        let stack = try await TweetsStack.shared()
        let alice = try await stack.makeUser("search")
        let marker = "zq\(Int.random(in: 100_000...999_999))"
        let a = try await stack.tweet(alice, "Learning \(marker) with #Rust today")
        let b = try await stack.tweet(alice, "More \(marker), no tags")
        let c = try await stack.tweet(alice, "#\(marker) as a tag and #rust")
        #expect(try await allPages(stack, "tweets.search", ["query": .string(marker)], limit: 1).map(\.id) == [c.id, b.id, a.id])
        #expect(try await allPages(stack, "tweets.search", ["query": .string("#\(marker)")], limit: 5).map(\.id) == [c.id])
        #expect(try await allPages(stack, "tweets.search", ["query": .string("\(marker.uppercased()) #RUST")], limit: 5).map(\.id) == [c.id, a.id])
        #expect(try await allPages(stack, "tweets.search", ["query": .string("\(marker) learning")], limit: 5).map(\.id) == [a.id])
        // A tag typed with a combining accent is the composed one.
        let decomposed = try await stack.tweet(alice, "#\(marker)cafe\u{301}")
        #expect(decomposed.hashtags.map { Array($0.unicodeScalars) } == [Array("\(marker)caf\u{E9}".unicodeScalars)])
        #expect(try await allPages(stack, "tweets.search", ["query": .string("#\(marker)caf\u{E9}")], limit: 5).map(\.id) == [decomposed.id])
        for query in ["", "  ", "!!! ???"] {
            let error = await rpcError { _ = try await stack.call("tweets", "tweets.search", ["query": .string(query)], decoding: TweetPage.self) }
            #expect(error?.field == "query")
        }
    }

    @Test("latest lists the network's tweets newest first, without reposts, deleted tweets or replies to others; blocks and mutes hide")
    func latest() async throws {
        let stack = try await TweetsStack.shared()
        let (ann, ben, cal) = (try await stack.makeUser("latest1"), try await stack.makeUser("latest2"), try await stack.makeUser("latest3"))
        let root = try await stack.tweet(ann, "root")
        let thread = try await stack.tweet(ann, "and a thread of it", replyTo: root.id)
        _ = try await stack.tweet(ben, "a reply to someone else", replyTo: root.id)
        _ = try await stack.call("tweets", "tweets.repost", ["tweetId": .id(root.id)], as: ben, decoding: JSONValue.self)
        let gone = try await stack.tweet(ben, "soon deleted")
        _ = try await stack.call("tweets", "tweets.delete", ["tweetId": .id(gone.id)], as: ben, decoding: JSONValue.self)
        let bens = try await stack.tweet(ben, "ben's own")
        let newest = try await stack.tweet(cal, "cal's own")
        // The suite's other tests post meanwhile (and one stores tweets with ids far ahead): pages
        // are read from just above the newest of these down to the first, and only the three users'
        // tweets are compared.
        let ours = Set([ann.id, ben.id, cal.id])
        func listed(as viewer: StackUser?, limit: Int = 100) async throws -> [EntityID] {
            var items: [Tweet] = []
            var cursor: String? = KeysetCursor.encodeID(newest.id.value + 1)
            repeat {
                var params: [String: JSONValue] = ["limit": .int(Int64(limit))]
                if let cursor { params["cursor"] = .string(cursor) }
                let page = try await stack.call("tweets", "tweets.latest", params, as: viewer, decoding: TweetPage.self)
                #expect(page.items.count <= limit && page.items.map(\.id.value) == page.items.map(\.id.value).sorted(by: >))
                items += page.items
                cursor = page.items.last.map { $0.id.value > root.id.value } == true ? page.nextCursor : nil
            } while cursor != nil
            return items.filter { ours.contains($0.author.id) && $0.id.value >= root.id.value }.map(\.id)
        }
        #expect(try await listed(as: nil) == [newest.id, bens.id, thread.id, root.id])
        #expect(try await listed(as: nil, limit: 3) == [newest.id, bens.id, thread.id, root.id])
        // From the top, the newest come first.
        let top = try await stack.call("tweets", "tweets.latest", ["limit": 100], decoding: TweetPage.self).items.map(\.id.value)
        #expect(top == top.sorted(by: >) && !top.isEmpty)
        _ = try await stack.call("social-graph", "graph.block", ["userId": .id(ben.id)], as: cal, decoding: JSONValue.self)
        #expect(try await listed(as: cal) == [newest.id, thread.id, root.id])
        #expect(try await listed(as: ben) == [bens.id, thread.id, root.id])
        #expect(try await listed(as: ann) == [newest.id, bens.id, thread.id, root.id])
        // A mute hides for the muter alone, until it is lifted or its time is up (the sweep, every 5 s).
        // ann's first read after the mute asks social-graph; later reads use what tweets holds of her
        // mutes, which it forgets when social-graph's announcement of a change arrives, a moment
        // after the change was answered.
        _ = try await stack.call("social-graph", "graph.mute", ["userId": .id(cal.id)], as: ann, decoding: JSONValue.self)
        #expect(try await listed(as: ann) == [bens.id, thread.id, root.id])
        #expect(try await listed(as: ben) == [bens.id, thread.id, root.id])
        _ = try await stack.call("social-graph", "graph.unmute", ["userId": .id(cal.id)], as: ann, decoding: JSONValue.self)
        #expect(await eventually { (try? await listed(as: ann)) == [newest.id, bens.id, thread.id, root.id] })
        _ = try await stack.call(
            "social-graph", "graph.mute", ["userId": .id(ben.id), "durationSeconds": 3], as: ann, decoding: JSONValue.self)
        #expect(await eventually(timeout: .seconds(2)) { (try? await listed(as: ann)) == [newest.id, thread.id, root.id] })
        #expect(await eventually(timeout: .seconds(10)) { (try? await listed(as: ann)) == [newest.id, bens.id, thread.id, root.id] })
        // None of theirs carries media.
        let media = try await stack.call("tweets", "tweets.latest", ["mediaOnly": true, "limit": 100], decoding: TweetPage.self)
        #expect(media.items.allSatisfy { !$0.media.isEmpty } && !media.items.contains { ours.contains($0.author.id) })
        let forged = await rpcError { _ = try await stack.call("tweets", "tweets.latest", ["cursor": "nonsense!"], decoding: TweetPage.self) }
        #expect(forged?.field == "cursor")
        let limit = await rpcError { _ = try await stack.call("tweets", "tweets.latest", ["limit": 101], decoding: TweetPage.self) }
        #expect(limit?.field == "limit")
        let flag = await rpcError { _ = try await stack.call("tweets", "tweets.latest", ["mediaOnly": "yes"], decoding: TweetPage.self) }
        #expect(flag?.field == "mediaOnly")
    }
}
