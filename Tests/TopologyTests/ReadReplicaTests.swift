import AviaryAPI
import AviaryJSON
import Foundation
import TestSupport
import Testing

/// Follower pages, message history, tweet lists, searches and profiles read from a streaming
/// replica (`AVIARY_POSTGRES_REPLICA_URLS`), except right after a write to them, and not from a
/// replica that fell behind.
@Suite struct ReadReplicaTests {
    @Test func pagesComeFromTheReplicaExceptRightAfterTheirWrites() async throws {
        let primary = try await TestServers.startPrivatePostgres()
        let replica = try await primary.makeReplica()
        let redis = try await TestServers.startPrivateRedis()
        let stack = try await ServiceStack.start(
            ["auth", "social-graph", "messaging", "tweets", "media"], redisDatabase: 0, environment: ["AVIARY_POSTGRES_REPLICA_WINDOW_MS": "6000"],
            postgresServer: primary, redisServer: redis, replica: replica)
        let (ana, ben, cat) = (try await stack.makeUser("ana"), try await stack.makeUser("ben"), try await stack.makeUser("cat"))
        func followers(of user: StackUser) async throws -> Set<String> {
            let page: JSONValue = try await stack.call("social-graph", "graph.followers", ["userId": user.idValue], as: cat)
            return Set(page["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [])
        }
        let conversation: JSONValue = try await stack.call("messaging", "messaging.openDirect", ["userId": ben.idValue], as: ana)
        let conversationID = try #require(conversation["id"]?.stringValue)

        // A first read of each service starts its replica checks (every 250 ms); once the replica has
        // caught up and they have seen it, it stops replaying: what is written from now on is on the
        // primary alone.
        #expect(try await followers(of: ana).isEmpty)
        let _: JSONValue = try await stack.call("tweets", "tweets.search", ["query": "nothing"], as: cat)
        let _: JSONValue = try await stack.call("auth", "auth.getUser", ["userId": ben.idValue], as: cat)
        let position = try await primary.psql("SELECT pg_current_wal_lsn()", url: primary.url(database: "postgres"))
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let caughtUpBefore = try await eventually(timeout: .seconds(20), interval: .milliseconds(50)) {
            try await replica.psql("SELECT pg_last_wal_replay_lsn() >= '\(position)'", url: replica.url(database: "postgres")).contains("t")
        }
        #expect(caughtUpBefore)
        try await Task.sleep(for: .milliseconds(600))
        _ = try await replica.psql("SELECT pg_wal_replay_pause()", url: replica.url(database: "postgres"))
        // A follow through the service marks ana's followers: cat, told of nothing, reads them from
        // the primary all the same, and so does ben the history after ana's message.
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": ana.idValue], as: ben)
        #expect(try await followers(of: ana) == [ben.id.description])
        let _: JSONValue = try await stack.call(
            "messaging", "messaging.send", ["conversationId": .string(conversationID), "text": "seen at once"], as: ana)
        let history: JSONValue = try await stack.call(
            "messaging", "messaging.history", ["conversationId": .string(conversationID)], as: ben)
        #expect(history["items"]?.arrayValue?.first?["text"] == "seen at once")
        // ana posts and renames herself: her tweets, her searches and her profile are read from
        // the primary, by anyone; cat, who wrote nothing, searches the replica, which lacks the post.
        let word = "replicaword\(UInt32.random(in: 0...UInt32.max))"
        let tweet: JSONValue = try await stack.call("tweets", "tweets.create", ["text": .string("a \(word) post")], as: ana)
        let tweetID = try #require(tweet["id"]?.stringValue)
        func ids(_ page: JSONValue) -> [String] { page["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [] }
        let anasTweets: JSONValue = try await stack.call("tweets", "tweets.byUser", ["userId": ana.idValue], as: cat)
        #expect(ids(anasTweets) == [tweetID])
        let anasSearch: JSONValue = try await stack.call("tweets", "tweets.search", ["query": .string(word)], as: ana)
        #expect(ids(anasSearch) == [tweetID])
        let catsSearch: JSONValue = try await stack.call("tweets", "tweets.search", ["query": .string(word)], as: cat)
        #expect(ids(catsSearch).isEmpty, "cat's search did not read the paused replica")
        let _: JSONValue = try await stack.call("auth", "auth.updateProfile", ["fullname": "Ana Renamed"], as: ana)
        let profile: JSONValue = try await stack.call("auth", "auth.getUser", ["userId": ana.idValue], as: cat)
        #expect(profile["fullname"] == "Ana Renamed")

        // A follow written behind the service's back marks nothing: ben's followers come from the
        // replica, which does not have it yet...
        let database = String(try #require(stack.environment["AVIARY_POSTGRES_URL"]?.split(separator: "/").last))
        _ = try await primary.psql(
            "INSERT INTO social_graph.follows (follower_id, followee_id) VALUES (\(cat.id), \(ben.id))",
            url: primary.url(database: database))
        #expect(try await followers(of: ben).isEmpty)
        // ...until the replica is found more than the window behind: then the primary answers.
        let leftOut = try await eventually(timeout: .seconds(15), interval: .milliseconds(100)) {
            try await followers(of: ben) == [cat.id.description]
        }
        #expect(leftOut)
        // Replaying again, the replica is read again, and has everything.
        _ = try await replica.psql("SELECT pg_wal_replay_resume()", url: replica.url(database: "postgres"))
        let caughtUp = try await eventually(timeout: .seconds(10), interval: .milliseconds(100)) {
            let bens = try await followers(of: ben)
            let anas = try await followers(of: ana)
            let search: JSONValue = try await stack.call("tweets", "tweets.search", ["query": .string(word)], as: cat)
            return bens == [cat.id.description] && anas == [ben.id.description] && ids(search) == [tweetID]
        }
        #expect(caughtUp)
    }
}
