import AviaryJSON
import Foundation
import Testing
import TestSupport

/// Reposts and quote posts end to end: fan-out to the reposter's followers, one entry per original,
/// counts, notifications, undoing, and what deletes and blocks do to them.
@Suite("Reposts and quotes")
struct RepostTests {
    /// The calls of one test, as one user or another.
    struct Calls {
        let edge: GatewayStack

        func call(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser?) async throws -> JSONValue {
            try await EdgeHTTP.rpc(edge.url, method, params, token: user?.token)
        }

        func result(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser?) async throws -> JSONValue {
            let answer = try await call(method, params, as: user)
            return try #require(answer["result"], "\(method) answered \(answer)")
        }

        func reason(_ method: String, _ params: [String: JSONValue], as user: EdgeUser?) async throws -> String? {
            try await call(method, params, as: user)["error"]?["data"]?["reason"]?.stringValue
        }

        func items(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser?) async throws -> [JSONValue] {
            try await result(method, params, as: user)["items"]?.arrayValue ?? []
        }

        /// `user`'s notifications of `type`, each as its actor's id.
        func notified(_ user: EdgeUser, _ type: String) async throws -> [String] {
            try await items("notifications.list", ["grouped": false], as: user).filter { $0["type"]?.stringValue == type }
                .compactMap { $0["actor"]?["id"]?.stringValue }
        }
    }

    @Test("a repost reaches the reposter's followers once per original, counts, notifies, and is taken back")
    func reposts() async throws {
        let edge = try await GatewayStack.shared()
        let calls = Calls(edge: edge)
        let (ana, ben, cat, dan) = (
            try await edge.register("ana"), try await edge.register("ben"), try await edge.register("cat"),
            try await edge.register("dan")
        )
        let eve = try await edge.register("eve")
        for followee in [cat, dan] { _ = try await calls.result("graph.follow", ["userId": .string(followee.id)], as: ben) }
        let tweet = try #require(try await calls.result("tweets.create", ["text": "worth sharing"], as: ana)["id"])

        let byCat = try await calls.result("tweets.repost", ["tweetId": tweet], as: cat)
        #expect(byCat["reposts"] == 1 && byCat["repostedByMe"] == true)
        let catRepost = try #require(byCat["repostId"]?.stringValue)
        // Idempotent: the same repost again.
        let again = try await calls.result("tweets.repost", ["tweetId": tweet], as: cat)
        #expect(again["reposts"] == 1 && again["repostId"]?.stringValue == catRepost)
        let danRepost = try #require(try await calls.result("tweets.repost", ["tweetId": tweet], as: dan)["repostId"])
        // A repost's id reposts its original.
        #expect(try await calls.result("tweets.repost", ["tweetId": danRepost], as: eve)["reposts"] == 3)

        // Ben follows both reposters: the tweet is in his home once, as dan's (the newest) repost.
        func homeEntries() async throws -> [JSONValue] {
            try await calls.items("timeline.home", as: ben).filter { $0["id"] == tweet }
        }
        #expect(await eventually { (try? await homeEntries().first?["repostedBy"]?["id"]?.stringValue) == dan.id })
        let entry = try #require(try await homeEntries().first)
        #expect(try await homeEntries().count == 1)
        #expect(entry["repostId"] == danRepost && entry["text"] == "worth sharing" && entry["author"]?["id"]?.stringValue == ana.id)
        #expect(entry["reposts"] == 3 && entry["repostedByMe"] == false)
        // The repost's id shows the entry; the original's the tweet, reposted by the caller or not.
        #expect(try await calls.result("tweets.get", ["tweetId": danRepost], as: nil)["repostedBy"]?["id"]?.stringValue == dan.id)
        let seenByCat = try await calls.result("tweets.get", ["tweetId": tweet], as: cat)
        #expect(seenByCat["repostedByMe"] == true && seenByCat["repostedBy"] == .null && seenByCat["repostId"] == .null)
        // Reposts are on the reposters' own timelines, and listed on the tweet.
        #expect(try await calls.items("timeline.user", ["userId": .string(cat.id)], as: nil).first?["repostId"]?.stringValue == catRepost)
        let reposters = try await calls.items("tweets.reposters", ["tweetId": tweet], as: nil).compactMap { $0["id"]?.stringValue }
        #expect(reposters == [eve.id, dan.id, cat.id])
        // The author is told, once per reposter.
        #expect(await eventually { (try? await calls.notified(ana, "repost").sorted()) == [cat.id, dan.id, eve.id].sorted() })

        // Refusals.
        #expect(try await calls.reason("tweets.repost", ["tweetId": "12345"], as: cat) == "not_found")
        #expect(try await calls.reason("tweets.repost", ["tweetId": tweet], as: nil) == "unauthenticated")
        #expect(try await calls.reason("tweets.unrepost", ["tweetId": "12345"], as: cat) == "not_found")
        _ = try await calls.result("graph.block", ["userId": .string(ana.id)], as: eve)
        #expect(try await calls.reason("tweets.repost", ["tweetId": tweet], as: eve) == "forbidden")
        _ = try await calls.result("graph.unblock", ["userId": .string(ana.id)], as: eve)

        // Taken back (by the repost's id too): the count falls, ben sees cat's repost instead,
        // and dan's notification is withdrawn.
        let undone = try await calls.result("tweets.unrepost", ["tweetId": danRepost], as: dan)
        #expect(undone["reposts"] == 2 && undone["repostedByMe"] == false && undone["repostId"] == .null)
        #expect(try await calls.result("tweets.unrepost", ["tweetId": tweet], as: dan)["reposts"] == 2)  // idempotent
        #expect(await eventually { (try? await homeEntries().first?["repostedBy"]?["id"]?.stringValue) == cat.id })
        #expect(await eventually { (try? await calls.notified(ana, "repost").sorted()) == [cat.id, eve.id].sorted() })

        // A block between ben and ana hides her tweet from his home, though cat reposted it.
        _ = try await calls.result("graph.block", ["userId": .string(ana.id)], as: ben)
        #expect(try await homeEntries().isEmpty)
        _ = try await calls.result("graph.unblock", ["userId": .string(ana.id)], as: ben)
        #expect(try await homeEntries().count == 1)

        // Deleted, the original takes its reposts with it.
        _ = try await calls.result("tweets.delete", ["tweetId": tweet], as: ana)
        #expect(await eventually { (try? await homeEntries().isEmpty) == true })
        #expect(try await calls.items("timeline.user", ["userId": .string(cat.id)], as: nil).isEmpty)
        #expect(try await calls.reason("tweets.repost", ["tweetId": tweet], as: ben) == "not_found")
    }

    @Test("a repost on one page of a home timeline and its original on a later page show once, on the first")
    func oneEntryAcrossPages() async throws {
        let edge = try await GatewayStack.shared()
        let calls = Calls(edge: edge)
        let (ann, bo, cy) = (try await edge.register("ann"), try await edge.register("bo"), try await edge.register("cy"))
        for user in [bo, cy] { _ = try await calls.result("graph.follow", ["userId": .string(user.id)], as: ann) }
        func post(_ text: String, as user: EdgeUser) async throws -> String {
            try #require(try await calls.result("tweets.create", ["text": .string(text)], as: user)["id"]?.stringValue)
        }
        // Newest first, ann's home holds: cy's repost of bo's tweet, cy's three tweets, bo's tweet.
        let original = try await post("bo's, to be reposted", as: bo)
        var others: [String] = []
        for number in 1...3 { others.append(try await post("cy \(number)", as: cy)) }
        let repost = try #require(try await calls.result("tweets.repost", ["tweetId": .string(original)], as: cy)["repostId"]?.stringValue)
        func page(_ cursor: String?) async throws -> (entries: [(id: String, repostId: String?)], next: String?) {
            var params: [String: JSONValue] = ["limit": 2]
            params["cursor"] = cursor.map { .string($0) }
            let result = try await calls.result("timeline.home", params, as: ann)
            let entries = (result["items"]?.arrayValue ?? []).map { ($0["id"]?.stringValue ?? "", $0["repostId"]?.stringValue) }
            return (entries, result["nextCursor"]?.stringValue)
        }
        #expect(await eventually { (try? await page(nil).entries.first?.repostId) == repost })
        var entries: [(id: String, repostId: String?)] = []
        var cursor: String?
        repeat {
            let next = try await page(cursor)
            entries += next.entries
            cursor = next.next
        } while cursor != nil
        #expect(entries.filter { $0.id == original }.map(\.repostId) == [repost], "\(entries)")
        #expect(Set(others).isSubset(of: Set(entries.map(\.id))))
    }

    @Test("a quote shows the quoted tweet, notifies its author, and keeps it as deleted once deleted; refusals")
    func quotes() async throws {
        let edge = try await GatewayStack.shared()
        let calls = Calls(edge: edge)
        let (ana, ben, cat) = (try await edge.register("ana"), try await edge.register("ben"), try await edge.register("cat"))
        let tweet = try #require(try await calls.result("tweets.create", ["text": "quote me"], as: ana)["id"])
        let quoting = try await calls.result("tweets.create", ["text": "well said", "quoteOf": tweet], as: ben)
        #expect(quoting["quoteOf"] == tweet && quoting["quote"]?["id"] == tweet && quoting["quote"]?["text"] == "quote me")
        let id = try #require(quoting["id"])
        #expect(try await calls.result("tweets.get", ["tweetId": id], as: nil)["quote"]?["author"]?["id"]?.stringValue == ana.id)
        #expect(await eventually { (try? await calls.notified(ana, "quote")) == [ben.id] })

        // Refusals: nothing to quote, or a block between the two.
        #expect(try await calls.reason("tweets.create", ["text": "x", "quoteOf": "12345"], as: ben) == "not_found")
        _ = try await calls.result("graph.block", ["userId": .string(cat.id)], as: ana)
        #expect(try await calls.reason("tweets.create", ["text": "x", "quoteOf": tweet], as: cat) == "forbidden")
        // Cat sees ben's tweet, but not what it quotes.
        let seenByCat = try await calls.result("tweets.get", ["tweetId": id], as: cat)
        #expect(seenByCat["text"] == "well said" && seenByCat["quote"] == .null)

        // The quoted tweet deleted: shown as deleted, without its text; no longer quotable.
        _ = try await calls.result("tweets.delete", ["tweetId": tweet], as: ana)
        // Another instance hears of the delete a moment later (the cluster topology runs two).
        #expect(await eventually {
            let after = try? await calls.result("tweets.get", ["tweetId": id], as: nil)
            return after?["quote"]?["deleted"] == true && after?["quote"]?["text"] == .null
        })
        #expect(try await calls.reason("tweets.create", ["text": "x", "quoteOf": tweet], as: ben) == "not_found")
        // Ben's tweet deleted: ana's notification goes.
        _ = try await calls.result("tweets.delete", ["tweetId": id], as: ben)
        #expect(await eventually { (try? await calls.notified(ana, "quote")) == [] })
    }
}
