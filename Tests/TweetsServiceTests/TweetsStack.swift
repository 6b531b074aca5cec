import AviaryAPI
import AviaryJSON
import Foundation
import Logging
import Postgres
import RPC
import Redis
import TestSupport

/// The suite's services: auth, social-graph and tweets on one database and Redis database 8,
/// started once per test process. The media service is left out and its address points at a
/// port nobody listens on, so that tweets with media meet an unreachable media service.
enum TweetsStack {
    private static let started = Task {
        try await ServiceStack.start(
            ["auth", "social-graph", "tweets"], redisDatabase: 8,
            environment: ["AVIARY_MEDIA_ADDRESSES": "127.0.0.1:\(try freePort())"])
    }

    static func shared() async throws -> ServiceStack {
        try await started.value
    }
}

extension ServiceStack {
    /// Posts a tweet as `user`.
    func tweet(
        _ user: StackUser, _ text: String, replyTo: EntityID? = nil, mediaIds: [String]? = nil, key: String? = nil
    ) async throws -> Tweet {
        var params: [String: JSONValue] = ["text": .string(text)]
        if let replyTo { params["replyTo"] = .string(replyTo.description) }
        if let mediaIds { params["mediaIds"] = .array(mediaIds.map { .string($0) }) }
        if let key { params["idempotencyKey"] = .string(key) }
        return try await call("tweets", "tweets.create", params, as: user, decoding: Tweet.self)
    }

    /// `tweets.get` as `user` (or anonymously), through the stack's tweets instances or through `client`.
    func getTweet(_ id: EntityID, as user: StackUser? = nil, on client: RPCClient? = nil) async throws -> Tweet {
        try await (client ?? self.client("tweets")).call(
            "tweets.get", params: ["tweetId": JSONValue.string(id.description)], meta: RequestMeta(token: user?.token),
            as: Tweet.self)
    }

    /// Another tweets instance, outside the stack's addresses, and a client of it alone.
    func extraTweets(environment: [String: String] = [:]) async throws -> (process: ServiceProcess, client: RPCClient) {
        let process = try await startExtraInstance("tweets", environment: environment)
        return (process, RPCClient(configuration: .init(addresses: [process.rpcAddress]), logger: Logger(label: "extra-tweets")))
    }

    /// `tweets.like` or `tweets.unlike`.
    func like(_ id: EntityID, by user: StackUser, _ liking: Bool = true) async throws -> LikeState {
        try await call(
            "tweets", liking ? "tweets.like" : "tweets.unlike", ["tweetId": .string(id.description)], as: user,
            decoding: LikeState.self)
    }

    /// Every `tweets` event recorded since `since` (give or take a second), oldest first: those still
    /// in the outbox and those the relay already moved to `aviary:events:tweets`.
    func tweetEvents(since: Date) async throws -> [TweetEvent] {
        var events = Set<TweetEvent>()
        let rows = try await database.query("SELECT id, type, payload::text FROM tweets.outbox WHERE topic = 'tweets'")
        for row in rows {
            events.insert(
                TweetEvent(
                    outboxID: try row.decode(Int64.self, at: 0), type: try row.decode(String.self, at: 1),
                    payload: try row.decode(String.self, at: 2)))
        }
        let start = Int64(since.timeIntervalSince1970 * 1000) - 1000
        let entries = try await redis.send(["XRANGE", "aviary:events:tweets", RedisArgument("\(start)-0"), "+"]).array ?? []
        for entry in entries {
            guard let fields = entry.array?.last?.array else { continue }
            var values: [String: String] = [:]
            for pair in stride(from: 0, to: fields.count - 1, by: 2) {
                values[fields[pair].string ?? ""] = fields[pair + 1].string
            }
            guard values["source"] == "tweets", let type = values["type"], let payload = values["payload"],
                let id = values["outbox_id"].flatMap({ Int64($0) })
            else { continue }
            events.insert(TweetEvent(outboxID: id, type: type, payload: payload))
        }
        return events.sorted { $0.outboxID < $1.outboxID }
    }

    /// The events about `tweet` since `since`.
    func tweetEvents(of tweet: EntityID, since: Date) async throws -> [TweetEvent] {
        try await tweetEvents(since: since).filter { $0.fields["tweetId"] == .string(tweet.description) }
    }
}

/// A `tweets` event, from the outbox or the stream.
struct TweetEvent: Hashable {
    var outboxID: Int64
    var type: String
    var payload: String

    var fields: [String: JSONValue] {
        (try? JSONDecoder().decode([String: JSONValue].self, from: Data(payload.utf8))) ?? [:]
    }
}

/// A page of tweets.
struct TweetPage: Decodable {
    var items: [Tweet]
    var nextCursor: String?
}
