import AviaryJSON
import Foundation
import Testing
import TestSupport

/// Deleting an account end to end: every service erases what it kept of the user, and no public
/// read shows a trace of them afterwards.
@Suite("Account deletion")
struct AccountDeletionTests {
    @Test("a deleted account's sessions end, and its profile, tweets, likes, follows, messages, media and notifications go")
    func deletion() async throws {
        let edge = try await GatewayStack.shared()
        let (dan, eve) = (try await edge.register("dan"), try await edge.register("eve"))
        func call(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser?) async throws -> JSONValue {
            try await EdgeHTTP.rpc(edge.url, method, params, token: user?.token)
        }
        func result(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser?) async throws -> JSONValue {
            let answer = try await call(method, params, as: user)
            return try #require(answer["result"], "\(method) answered \(answer)")
        }
        func reason(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser?) async throws -> String? {
            try await call(method, params, as: user)["error"]?["data"]?["reason"]?.stringValue
        }
        let word = "gonesoon\(UInt32.random(in: 0...UInt32.max))"

        // Dan leaves traces everywhere.
        _ = try await result("graph.follow", ["userId": .string(eve.id)], as: dan)
        _ = try await result("graph.follow", ["userId": .string(dan.id)], as: eve)
        let evesTweet = try #require(try await result("tweets.create", ["text": "eve's tweet"], as: eve)["id"])
        let upload = try await EdgeHTTP.send(
            "POST", edge.url + "/media?purpose=tweet", body: Data(MediaFixtures.png(width: 9, height: 7)),
            headers: ["Authorization": "Bearer \(dan.token)", "Content-Type": "image/png"])
        let mediaURL = try #require(upload.json["url"]?.stringValue)
        let mediaID = try #require(upload.json["id"])
        let dansTweet = try #require(
            try await result("tweets.create", ["text": .string("dan says \(word)"), "mediaIds": [mediaID]], as: dan)["id"])
        _ = try await result("tweets.create", ["text": .string("a reply \(word)"), "replyTo": evesTweet], as: dan)
        _ = try await result("tweets.like", ["tweetId": evesTweet], as: dan)
        _ = try await result("tweets.repost", ["tweetId": evesTweet], as: dan)
        _ = try await result("tweets.bookmark", ["tweetId": evesTweet], as: dan)
        let direct = try #require(try await result("messaging.openDirect", ["userId": .string(eve.id)], as: dan)["id"])
        _ = try await result("messaging.send", ["conversationId": direct, "text": .string("secret \(word)")], as: dan)
        let evesMessage = try #require(try await result("messaging.send", ["conversationId": direct, "text": "hi dan"], as: eve)["id"])
        _ = try await result("messaging.react", ["messageId": evesMessage, "emoji": "👍"], as: dan)
        let group = try #require(try await result("messaging.createGroup", ["title": "pair", "memberIds": [.string(eve.id)]], as: dan)["id"])
        _ = try await result("messaging.send", ["conversationId": group, "text": .string("group \(word)")], as: dan)
        #expect(await eventually { (try? await result("notifications.list", as: eve)["items"]?.arrayValue?.count ?? 0) ?? 0 >= 4 })
        #expect(await eventually { (try? await result("timeline.home", as: eve)["items"]?.arrayValue?.contains { $0["id"] == dansTweet }) == true })

        // The password confirms it; a wrong one is refused.
        #expect(try await call("auth.deleteAccount", ["password": "not the password"], as: dan)["error"]?["data"]?["field"] == "password")
        #expect(try await result("auth.deleteAccount", ["password": "correct horse battery"], as: dan)["deleted"] == true)

        // Signed out everywhere, and gone from auth at once.
        #expect(await eventually { (try? await reason("auth.me", as: dan)) == "unauthenticated" })
        #expect(try await reason("auth.login", ["login": .string(dan.username), "password": "correct horse battery"], as: nil) == "unauthenticated")
        #expect(try await reason("auth.getUser", ["userId": .string(dan.id)], as: eve) == "not_found")
        #expect(try await reason("auth.getUser", ["username": .string(dan.username)], as: eve) == "not_found")
        // The username stays taken for 30 days; the email is free at once.
        let again = try await call(
            "auth.register", ["email": .string("\(dan.username)@example.com"), "password": "correct horse battery",
                              "username": .string(dan.username), "fullname": "Impostor"], as: nil)
        #expect(again["error"]?["data"]?["field"] == "username")
        _ = try await result(
            "auth.register", ["email": .string("\(dan.username)@example.com"), "password": "correct horse battery",
                              "username": .string("new_\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"),
                              "fullname": "New owner"], as: nil)

        // Every service erases its part (through the events): wait for the last of them.
        #expect(await eventually(timeout: .seconds(20)) {
            let tweet = try? await result("tweets.get", ["tweetId": evesTweet], as: eve)
            let following = try? await result("graph.following", ["userId": .string(eve.id)], as: eve)
            let history = try? await result("messaging.history", ["conversationId": direct], as: eve)
            return tweet?["likes"] == 0 && tweet?["reposts"] == 0 && tweet?["replies"] == 0
                && following?["items"]?.arrayValue?.isEmpty == true
                && history?["items"]?.arrayValue?.allSatisfy { $0["text"]?.stringValue?.contains(word) != true } == true
        })

        // No one can follow him now, though social-graph confirmed he existed when eve followed him.
        let follow = try await call("graph.follow", ["userId": .string(dan.id)], as: eve)
        #expect(follow["error"]?["data"]?["reason"] == "not_found", "\(follow)")

        // Nothing public shows him: every read eve can make, looked through for his name and words
        // (services that keep user summaries a few seconds, as a rename shows, drop his within 10 s).
        let reads: [(String, [String: JSONValue])] = [
            ("auth.searchUsers", ["query": .string(dan.username)]),
            ("tweets.byUser", ["userId": .string(dan.id), "includeReplies": true]),
            ("tweets.search", ["query": .string(word)]),
            ("tweets.get", ["tweetId": dansTweet]),
            ("tweets.replies", ["tweetId": evesTweet]),
            ("tweets.likers", ["tweetId": evesTweet]),
            ("tweets.reposters", ["tweetId": evesTweet]),
            ("tweets.likedBy", ["userId": .string(dan.id)]),
            ("tweets.pinned", ["userId": .string(dan.id)]),
            ("timeline.home", [:]),
            ("timeline.user", ["userId": .string(dan.id)]),
            ("timeline.user", ["userId": .string(eve.id)]),
            ("graph.followers", ["userId": .string(eve.id)]),
            ("graph.following", ["userId": .string(eve.id)]),
            ("graph.followers", ["userId": .string(dan.id)]),
            ("graph.relationship", ["userId": .string(dan.id)]),
            ("notifications.list", [:]),
            ("messaging.conversations", [:]),
            ("messaging.history", ["conversationId": direct]),
            ("messaging.history", ["conversationId": group]),
        ]
        func traces() async throws -> [String] {
            var found: [String] = []
            for (method, params) in reads {
                let answer = try await call(method, params, as: eve)
                let text = String(decoding: try WireEncoding.encode(answer), as: UTF8.self)
                if text.contains(dan.username) || text.contains(word) { found.append("\(method) \(params): \(text.prefix(600))") }
            }
            return found
        }
        _ = await eventually(timeout: .seconds(30), interval: .milliseconds(500)) { (try? await traces().isEmpty) == true }
        #expect(try await traces() == [])
        // Counts and marks he made are taken back; his tweet is a tombstone; his picture is gone.
        let tweet = try await result("tweets.get", ["tweetId": dansTweet], as: eve)
        #expect(tweet["deleted"] == true && tweet["text"] == .null && tweet["media"] == [])
        let stats = try await result("graph.stats", ["userId": .string(eve.id)], as: eve)
        #expect(stats["followers"] == 0 && stats["following"] == 0)
        let history = try await result("messaging.history", ["conversationId": direct], as: eve)["items"]?.arrayValue ?? []
        #expect(history.first { $0["id"] == evesMessage }?["reactions"] == [])
        #expect(history.filter { $0["deleted"] == true }.count == 1)
        #expect(try await result("notifications.list", as: eve)["items"]?.arrayValue?.isEmpty == true)
        #expect(await eventually { (try? await EdgeHTTP.send("GET", mediaURL, body: nil, headers: [:]).status) == 404 })
    }
}
