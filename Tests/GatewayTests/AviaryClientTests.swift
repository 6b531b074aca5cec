import AviaryAPI
import AviaryClient
import AviaryJSON
import Foundation
import RPC
import Testing
import TestSupport

/// The Swift client library against the real gateway and services, as an app uses it.
@Suite("AviaryClient")
struct AviaryClientTests {
    static func register(_ client: AviaryClient, _ name: String) async throws -> AviaryClient.Session {
        let username = "\(name.prefix(6))_\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
        return try await client.register(
            RegisterParams(email: "\(username)@example.com", password: "correct horse battery", username: username, fullname: name))
    }

    /// The next event of `events` that `matches`, within 30 s: what is checked is that it comes, not
    /// how soon (these tests run beside the whole suite's load; one missed the 10 s it had before).
    static func next(
        _ events: AsyncThrowingStream<JSONValue, any Error>, where matches: @escaping @Sendable (JSONValue) -> Bool
    ) async throws -> JSONValue? {
        try await withThrowingTaskGroup(of: JSONValue?.self) { group in
            group.addTask {
                for try await event in events where matches(event) { return event }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: .seconds(30))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    @Test("sign in, follow, post, read the home timeline, receive a notification and a message live")
    func appSession() async throws {
        let edge = try await GatewayStack.shared()
        let alice = AviaryClient(configuration: .init(gateway: edge.url))
        let bob = AviaryClient(configuration: .init(gateway: edge.url))
        let aliceSession = try await Self.register(alice, "alice")
        let bobSession = try await Self.register(bob, "bob")
        // Signing in again gives a session of its own.
        let again = try await alice.signIn(login: aliceSession.user.username, password: "correct horse battery")
        #expect(again.user.id == aliceSession.user.id && again.refreshToken != aliceSession.refreshToken)

        // From the start of time: whether the subscription or the follow's notification comes first,
        // the notification is then delivered once (caught up, or live), as an app resuming does.
        let notifications = alice.notifications(after: "1")
        let messages = bob.messagingEvents()
        let follow = try await bob.call(GraphAPI.follow, UserParams(userId: aliceSession.user.id))
        #expect(follow.following)
        let followed = try await Self.next(notifications) { $0["notification"]?["type"]?.stringValue == "follow" }
        #expect(followed?["notification"]?["actor"]?["id"]?.stringValue == bobSession.user.id.description)

        let tweet = try await alice.call(TweetsAPI.create, CreateTweetParams(text: "hello from the client library"))
        let home = try await bob.call(TimelineAPI.home, PageParams(limit: PageLimit(10)))
        #expect(home.items.contains { $0.id == tweet.id })

        let direct = try await alice.call(MessagingAPI.openDirect, OpenDirectParams(userId: bobSession.user.id))
        try await alice.call(MessagingAPI.send, SendParams(conversationId: direct.id, text: "hi bob"))
        let message = try await Self.next(messages) { $0["type"]?.stringValue == "message" }
        #expect(message?["message"]?["text"]?.stringValue == "hi bob")

        // A renewed session goes on working; the old refresh token is spent.
        let renewed = try await alice.refreshSession()
        #expect(renewed.accessToken != again.accessToken)
        let me: User = try await alice.call("auth.me")
        #expect(me.id == aliceSession.user.id)
        // The contract's errors come back as they are.
        let refused = await #expect(throws: RPCError.self) {
            _ = try await alice.call(TweetsAPI.create, CreateTweetParams(text: ""))
        }
        #expect(refused?.field == "text")
        await alice.close()
        await bob.close()
    }

    @Test("feeds opened before the socket is are subscribed once, each on its own name: a notification comes once, on its feed")
    func feedsBeforeTheSocket() async throws {
        let edge = try await GatewayStack.shared()
        let first = AviaryClient(configuration: .init(gateway: edge.url))
        let session = try await Self.register(first, "early")
        await first.close()
        // A stored session resumed, its feeds opened before any call: no socket yet. On a gateway of
        // its own, where these are the first subscriptions of both services.
        let (url, gateway) = try await edge.extraGateway([:])
        defer { gateway.kill() }
        let client = AviaryClient(configuration: .init(gateway: url))
        client.resume(session)
        let notifications = client.notifications(after: "1")
        let messages = client.messagingEvents()
        let bob = try await edge.register("bob")
        _ = try await EdgeHTTP.rpc(edge.url, "graph.follow", ["userId": .string(session.user.id.description)], token: bob.token)
        let (seen, chat) = (Inbox(), Inbox())
        let reading = Task {
            for try await event in notifications { seen.append(event) }
        }
        let chatting = Task {
            for try await event in messages { chat.append(event) }
        }
        let follows = { seen.all.count { $0["notification"]?["actor"]?["id"]?.stringValue == bob.id } }
        #expect(await eventually(timeout: .seconds(30)) { follows() > 0 })
        // Caught up by a second subscription, it would come again now.
        try await Task.sleep(for: .seconds(1))
        #expect(follows() == 1, "\(seen.all)")
        #expect(!chat.all.contains { $0["type"]?.stringValue == "resync" || $0["notification"] != nil }, "\(chat.all)")
        reading.cancel()
        chatting.cancel()
        await client.close()
    }

    @Test("access tokens are renewed before they expire, once for calls made at once, and after a refusal")
    func tokenRenewal() async throws {
        let edge = try await GatewayStack.shared()
        var configuration = AviaryClient.Configuration(gateway: edge.url)
        // Every token looks about to expire: each call renews it first.
        configuration.refreshMargin = .seconds(365 * 86_400)
        let client = AviaryClient(configuration: configuration)
        let first = try await Self.register(client, "renew")
        // Five calls at once share one renewal: a refresh token presented twice would end the session.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    let me: User = try await client.call("auth.me")
                    #expect(me.id == first.user.id)
                }
            }
            try await group.waitForAll()
        }
        let renewed = try #require(client.currentSession)
        #expect(renewed.accessToken != first.accessToken && renewed.refreshToken != first.refreshToken)
        await client.close()

        // A token the services refuse is renewed once and the call made again.
        let other = AviaryClient(configuration: .init(gateway: edge.url))
        var session = try await Self.register(other, "refused")
        session.accessToken = "not.a.token"
        other.resume(session)
        let me: User = try await other.call("auth.me")
        #expect(me.id == session.user.id && other.currentSession?.accessToken != "not.a.token")
        await other.close()
    }

    @Test("after its gateway restarts, the client reconnects and its notifications go on from the last one")
    func reconnects() async throws {
        let edge = try await GatewayStack.shared()
        let (url, process) = try await edge.extraGateway([:])
        let port = try #require(URLComponents(string: url)?.port)
        var configuration = AviaryClient.Configuration(gateway: url)
        configuration.reconnectDelay = .milliseconds(50)
        let alice = AviaryClient(configuration: configuration)
        let aliceSession = try await Self.register(alice, "alice")
        let notifications = alice.notifications()
        let bob = try await edge.register("bob")
        let _ = try await EdgeHTTP.rpc(edge.url, "graph.follow", ["userId": .string(aliceSession.user.id.description)], token: bob.token)
        #expect(try await Self.next(notifications) { $0["notification"]?["actor"]?["id"]?.stringValue == bob.id } != nil)

        process.kill()
        // While it is down, carol follows alice through the other gateway.
        let carol = try await edge.register("carol")
        let _ = try await EdgeHTTP.rpc(edge.url, "graph.follow", ["userId": .string(aliceSession.user.id.description)], token: carol.token)
        let restarted = try await edge.extraGateway([:], port: port)
        // A call waits for the socket to come back.
        let me: User = try await alice.call("auth.me")
        #expect(me.id == aliceSession.user.id)
        // It comes, or a resync does (the catch-up read failed, as under load): the list then has it.
        let missed = try await Self.next(notifications) {
            $0["notification"]?["actor"]?["id"]?.stringValue == carol.id || $0["type"]?.stringValue == "resync"
        }
        #expect(missed != nil, "neither the notification made while the socket was down nor a resync came")
        if missed?["type"]?.stringValue == "resync" {
            let page: Page<NotificationItem> = try await alice.call("notifications.list")
            #expect(page.items.contains { $0.actor.id.description == carol.id })
        }
        await alice.close()
        restarted.process.kill()
    }
}
