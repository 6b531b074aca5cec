import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Postgres
import RPC
import TestSupport
import Testing

/// The suite's stack: auth and two messaging instances (the stack's own and an extra one, for
/// cross-instance delivery) on Redis database 11, with a presence window of 1.5 s so that going
/// offline can be watched.
struct MessagingStack: Sendable {
    let stack: ServiceStack
    /// A second messaging instance that the stack's addresses do not include.
    let extra: ServiceProcess

    static let presenceWindow = Duration.milliseconds(1500)

    private static let started = Task {
        let stack = try await ServiceStack.start(
            ["auth", "social-graph", "messaging"], redisDatabase: 11,
            environment: ["AVIARY_MESSAGING_PRESENCE_WINDOW_MS": "1500"])
        return MessagingStack(stack: stack, extra: try await stack.startExtraInstance("messaging"))
    }

    static func shared() async throws -> MessagingStack {
        try await started.value
    }

    /// Calls a messaging method as `user` on the stack's instance.
    func call<R: Decodable>(_ method: String, _ params: [String: JSONValue] = [:], as user: StackUser?, decoding: R.Type = R.self)
        async throws -> R
    {
        try await stack.call("messaging", "messaging.\(method)", params, as: user, decoding: R.self)
    }

    /// The error a call fails with (nil when it succeeds).
    func refusal(_ method: String, _ params: [String: JSONValue] = [:], as user: StackUser?) async -> RPCError? {
        await rpcError { _ = try await stack.call("messaging", "messaging.\(method)", params, as: user, decoding: JSONValue.self) }
    }

    func users(_ count: Int, _ name: String = "m") async throws -> [StackUser] {
        try await stack.makeUsers(count, name)
    }

    /// Marks `user` as having taken part in `conversation` (as a message of theirs would), without
    /// the call that would show them online: presence is shown to those one talks with.
    func markTookPart(_ user: StackUser, in conversation: Conversation) async throws {
        try await stack.database.execute(
            "UPDATE messaging.members SET took_part = true WHERE conversation_id = $1 AND user_id = $2",
            [conversation.id.value, user.id.value])
    }

    /// Whether a pushed event is a presence change of `user`.
    static func presence(of user: StackUser) -> @Sendable (JSONValue) -> Bool {
        let id = user.id.description
        return { $0["type"]?.stringValue == "presence" && $0["userId"]?.stringValue == id }
    }

    func direct(_ a: StackUser, _ b: StackUser) async throws -> Conversation {
        try await call("openDirect", ["userId": b.idValue], as: a)
    }

    func group(_ title: String, by creator: StackUser, with members: [StackUser]) async throws -> Conversation {
        try await call(
            "createGroup", ["title": .string(title), "memberIds": .array(members.map(\.idValue))], as: creator)
    }

    func send(_ text: String, to conversation: Conversation, as user: StackUser, clientMessageId: String? = nil) async throws
        -> Message
    {
        var params: [String: JSONValue] = ["conversationId": .string(conversation.id.description), "text": .string(text)]
        if let clientMessageId { params["clientMessageId"] = .string(clientMessageId) }
        return try await call("send", params, as: user)
    }

    /// Opens a subscription of `user` on `instance` (default: the stack's).
    func subscribe(_ user: StackUser, on instance: ServiceProcess? = nil) async throws -> LiveStream {
        let process = instance ?? stack.process("messaging")
        let connection = try await RPCClientConnection.connect(host: process.host, port: process.rpcPort)
        let result = try await connection.call(
            "messaging.subscribe", meta: RequestMeta(token: user.token), as: [String: String].self)
        return LiveStream(connection: connection, subscription: try #require(result["subscription"]))
    }
}

/// One open `messaging.subscribe` stream: its events in arrival order.
final class LiveStream: Sendable {
    let connection: RPCClientConnection
    let subscription: String
    private let received: EventLog
    private let reader: Task<Void, Never>

    /// The events so far, shared with the reading task.
    private final class EventLog: Sendable {
        let events = Locked<[JSONValue]>([])
    }

    init(connection: RPCClientConnection, subscription: String) {
        self.connection = connection
        self.subscription = subscription
        let received = EventLog()
        self.received = received
        reader = Task {
            for await notification in connection.notifications where notification.method == "messaging.event" {
                guard let params = try? notification.params.decode(JSONValue.self), let event = params["event"] else { continue }
                received.events.withLock { $0.append(event) }
            }
        }
    }

    deinit { reader.cancel() }

    /// Every event so far that matches `filter`.
    func events(where filter: (JSONValue) -> Bool = { _ in true }) -> [JSONValue] {
        received.events.withLock { $0.filter(filter) }
    }

    /// Waits until `count` events match `filter` (or `timeout` passes) and returns those seen.
    @discardableResult
    func wait(for count: Int = 1, timeout: Duration = .seconds(5), where filter: @escaping (JSONValue) -> Bool) async throws
        -> [JSONValue]
    {
        _ = await eventually(timeout: timeout, interval: .milliseconds(10)) { events(where: filter).count >= count }
        return events(where: filter)
    }

    func close() async {
        await connection.close()
    }
}

extension JSONValue {
    /// Whether this event is of `type` and about `conversation`.
    func isEvent(_ type: String, in conversation: Conversation) -> Bool {
        self["type"]?.stringValue == type
            && (self["conversationId"]?.stringValue == conversation.id.description
                || self["message"]?["conversationId"]?.stringValue == conversation.id.description
                || self["conversation"]?["id"]?.stringValue == conversation.id.description)
    }
}

extension Conversation {
    var idValue: JSONValue { .string(id.description) }
}
