import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import Redis
import Testing
import TestSupport

/// The stack every notifications test shares (auth, social-graph, tweets, notifications, and a
/// second notifications instance), started once per test process on Redis database 10.
enum NotificationsStack {
    static let services = ["auth", "social-graph", "tweets", "notifications"]
    private static let started = Task { () throws -> (ServiceStack, ServiceProcess) in
        let stack = try await ServiceStack.start(services, redisDatabase: 10)
        return (stack, try await stack.startExtraInstance("notifications"))
    }

    static func shared() async throws -> (stack: ServiceStack, extra: ServiceProcess) {
        try await started.value
    }
}

/// A user's own connection to one notifications instance, for subscriptions.
struct NotificationsConnection: Sendable {
    let connection: RPCClientConnection
    let user: StackUser
    let inbox: PushInbox

    static func open(_ user: StackUser, port: Int) async throws -> NotificationsConnection {
        let connection = try await RPCClientConnection.connect(host: "127.0.0.1", port: port)
        return NotificationsConnection(connection: connection, user: user, inbox: PushInbox(connection.notifications))
    }

    struct Subscribed: Decodable {
        var subscription: String
    }

    func subscribe(lastId: String? = nil) async throws -> String {
        var params: [String: JSONValue] = [:]
        if let lastId { params["lastId"] = .string(lastId) }
        return try await connection.call(
            "notifications.subscribe", params: params, meta: RequestMeta(token: user.token), as: Subscribed.self
        ).subscription
    }

    func call(_ method: String, _ params: [String: JSONValue] = [:]) async throws -> JSONValue {
        try await connection.call(method, params: params, meta: RequestMeta(token: user.token), as: JSONValue.self)
    }

    /// The events of the next `count` pushes, or fewer if they do not come `within`.
    func events(_ count: Int, within timeout: Duration = .seconds(10)) async throws -> [JSONValue] {
        try await inbox.take(count, within: timeout).map { notification in
            #expect(notification.method == "notifications.event")
            return try notification.params.decode(JSONValue.self)["event"] ?? .null
        }
    }

    func close() async { await connection.close() }
}

extension ServiceStack {
    /// Posts a tweet as `user` and returns its id.
    func tweet(_ text: String, as user: StackUser, replyTo: String? = nil) async throws -> String {
        var params: [String: JSONValue] = ["text": .string(text)]
        if let replyTo { params["replyTo"] = .string(replyTo) }
        let tweet: JSONValue = try await call("tweets", "tweets.create", params, as: user)
        return try #require(tweet["id"]?.stringValue)
    }

    /// `user`'s notifications page.
    func notifications(of user: StackUser, _ params: [String: JSONValue] = [:]) async throws -> [JSONValue] {
        let page: JSONValue = try await call("notifications", "notifications.list", params, as: user)
        return page["items"]?.arrayValue ?? []
    }

    /// Appends an event to a topic's stream as a producer's relay would.
    func appendEvent(topic: String, type: String, payload: JSONValue, source: String, outboxID: Int64) async throws {
        try await appendEvents(topic: topic, [(type, payload, outboxID)], source: source)
    }

    /// Appends events to a topic's stream at once (`MULTI` … `EXEC`), so that a consumer waiting
    /// on the stream reads them as one batch.
    func appendEvents(
        topic: String, _ events: [(type: String, payload: JSONValue, outboxID: Int64)], source: String
    ) async throws {
        var commands: [[RedisArgument]] = [["MULTI"]]
        for event in events {
            let json = String(decoding: try JSONEncoder().encode(event.payload), as: UTF8.self)
            commands.append([
                "XADD", RedisArgument("aviary:events:\(topic)"), "*", "type", RedisArgument(event.type), "payload",
                RedisArgument(json), "outbox_id", RedisArgument(event.outboxID), "source", RedisArgument(source),
            ])
        }
        commands.append(["EXEC"])
        _ = try await redis.pipeline(commands)
    }
}

extension JSONValue {
    /// `event.notification.type` of a pushed event, or `event.type` for other events.
    var pushedType: String? { self["notification"]?["type"]?.stringValue ?? self["type"]?.stringValue }
}

/// The error reason of a failed call.
func reason(of body: () async throws -> Void) async -> String? {
    do {
        try await body()
        return nil
    } catch let error as RPCError {
        return error.reason ?? "code \(error.code)"
    } catch {
        return "\(error)"
    }
}
