import AviaryJSON

/// A user's day through the seven services, checked end to end: a follow, five posts, a like, the
/// home timeline, the notifications of both, a direct message and its history, a profile with its
/// counts. Run on a stack whose storage is set up some other way, it shows that set-up works as a
/// whole; it throws naming the first step that did not.
public enum UserDay {
    public static func run(on stack: ServiceStack) async throws {
        let (ana, ben) = (try await stack.makeUser("ana"), try await stack.makeUser("ben"))
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": ana.idValue], as: ben)
        var posted: [String] = []
        for number in 1...5 {
            let tweet: JSONValue = try await stack.call("tweets", "tweets.create", ["text": .string("a day \(number)")], as: ana)
            guard let id = tweet["id"]?.stringValue else { throw TestSupportError("tweets.create answered no id: \(tweet)") }
            posted.append(id)
        }
        let _: JSONValue = try await stack.call("tweets", "tweets.like", ["tweetId": .string(posted[0])], as: ben)
        let home = try await eventually(timeout: .seconds(10)) {
            let page: JSONValue = try await stack.call("timeline", "timeline.home", ["limit": 20], as: ben)
            return page["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == posted.reversed()
        }
        guard home else { throw TestSupportError("ben's home timeline did not show ana's five tweets, newest first, within 10 s") }
        let notified = try await eventually(timeout: .seconds(10)) {
            let page: JSONValue = try await stack.call("notifications", "notifications.list", [:], as: ana)
            let kinds = Set(page["items"]?.arrayValue?.compactMap { $0["type"]?.stringValue } ?? [])
            return kinds.isSuperset(of: ["follow", "like"])
        }
        guard notified else { throw TestSupportError("ana was not notified of ben's follow and like within 10 s") }
        let conversation: JSONValue = try await stack.call("messaging", "messaging.openDirect", ["userId": ben.idValue], as: ana)
        guard let conversationID = conversation["id"]?.stringValue else {
            throw TestSupportError("messaging.openDirect answered no id: \(conversation)")
        }
        let _: JSONValue = try await stack.call(
            "messaging", "messaging.send", ["conversationId": .string(conversationID), "text": "hello ben"], as: ana)
        let history: JSONValue = try await stack.call(
            "messaging", "messaging.history", ["conversationId": .string(conversationID)], as: ben)
        guard history["items"]?.arrayValue?.first?["text"] == "hello ben" else {
            throw TestSupportError("ben's history does not start with ana's message: \(history)")
        }
        let profile: JSONValue = try await stack.call("auth", "auth.getUser", ["userId": ana.idValue], as: ben)
        guard profile["stats"]?["followers"] == 1 && profile["stats"]?["tweets"] == 5 else {
            throw TestSupportError("ana's profile does not count 1 follower and 5 tweets: \(profile)")
        }
    }
}
