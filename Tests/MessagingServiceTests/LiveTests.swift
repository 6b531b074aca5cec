import AviaryAPI
import AviaryJSON
import Foundation
import Logging
import Postgres
import RPC
import Testing
import TestSupport

@Suite("Live events")
struct LiveTests {
    @Test("messages, typing and receipts reach subscribers on both instances in order, once each")
    func crossInstanceOrder() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "live")
        let (a, b) = (users[0], users[1])
        let conversation = try await fixture.direct(a, b)
        let aLive = try await fixture.subscribe(a, on: fixture.extra)
        let bLive = try await fixture.subscribe(b)
        defer { Task { await aLive.close(); await bLive.close() } }

        let hello = try await fixture.send("hello", to: conversation, as: b)
        _ = try await fixture.call("typing", ["conversationId": conversation.idValue, "typing": true], as: b, decoding: JSONValue.self)
        _ = try await fixture.call("typing", ["conversationId": conversation.idValue, "typing": false], as: b, decoding: JSONValue.self)
        let second = try await fixture.send("second", to: conversation, as: b)
        let unread: [String: Int64] = try await fixture.call(
            "markRead", ["conversationId": conversation.idValue, "upTo": .string(second.id.description)], as: a)
        #expect(unread["unreadCount"] == 0)

        let relevant: @Sendable (JSONValue) -> Bool = { event in
            ["message", "typing", "read"].contains { event.isEvent($0, in: conversation) }
        }
        try await aLive.wait(for: 5, where: relevant)
        try await bLive.wait(for: 3, where: relevant)
        // Anything extra (a repeat) would arrive right after.
        try await Task.sleep(for: .milliseconds(300))
        let aEvents = aLive.events(where: relevant).map(Self.summary)
        let bEvents = bLive.events(where: relevant).map(Self.summary)
        #expect(aEvents == ["message \(hello.id)", "typing true", "typing false", "message \(second.id)", "read \(a.id) \(second.id)"])
        #expect(bEvents == ["message \(hello.id)", "message \(second.id)", "read \(a.id) \(second.id)"])
        let pushed = try #require(aLive.events(where: { $0.isEvent("message", in: conversation) }).first)
        #expect(pushed["message"]?["sender"]?["username"]?.stringValue == b.username)
    }

    private static func summary(_ event: JSONValue) -> String {
        switch event["type"]?.stringValue {
        case "message": "message \(event["message"]?["id"]?.stringValue ?? "?")"
        case "typing": "typing \(event["typing"]?.boolValue ?? false)"
        case "read": "read \(event["userId"]?.stringValue ?? "?") \(event["upTo"]?.stringValue ?? "?")"
        default: "other"
        }
    }

    @Test("typing lapses after 6 seconds, announced once; repeats are absorbed")
    func typingExpiry() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "type")
        let conversation = try await fixture.direct(users[0], users[1])
        let watcher = try await fixture.subscribe(users[1], on: fixture.extra)
        defer { Task { await watcher.close() } }
        for _ in 0..<3 {
            _ = try await fixture.call(
                "typing", ["conversationId": conversation.idValue, "typing": true], as: users[0], decoding: JSONValue.self)
        }
        let typing: @Sendable (JSONValue) -> Bool = { $0.isEvent("typing", in: conversation) }
        let started = ContinuousClock.now
        let on = try await watcher.wait(for: 1, where: typing)
        #expect(on.count == 1 && on[0]["typing"]?.boolValue == true && on[0]["userId"]?.stringValue == users[0].id.description)
        let both = try await watcher.wait(for: 2, timeout: .seconds(9), where: typing)
        let lapse = ContinuousClock.now - started
        #expect(both.map { $0["typing"]?.boolValue } == [true, false])
        #expect(lapse >= .seconds(5.5) && lapse < .seconds(8.5), "lapsed after \(lapse)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(watcher.events(where: typing).count == 2)
        // The typist sees no typing events of their own.
        let own = try await fixture.subscribe(users[0])
        _ = try await fixture.call(
            "typing", ["conversationId": conversation.idValue, "typing": true], as: users[0], decoding: JSONValue.self)
        _ = try await fixture.call(
            "typing", ["conversationId": conversation.idValue, "typing": false], as: users[0], decoding: JSONValue.self)
        try await watcher.wait(for: 4, where: typing)
        #expect(own.events(where: typing).isEmpty)
        #expect(watcher.events(where: typing).map { $0["typing"]?.boolValue } == [true, false, true, false])
        await own.close()
    }

    @Test("presence: online while subscribed or recently active, then offline with lastSeen, announced to contacts, hidden from strangers")
    func presence() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "pres")
        let (watcher, subject, stranger) = (users[0], users[1], users[2])
        let direct = try await fixture.direct(watcher, subject)
        try await fixture.markTookPart(subject, in: direct)
        let watching = try await fixture.subscribe(watcher)
        defer { Task { await watching.close() } }
        let ask = { () async throws -> [Presence] in
            try await fixture.call("presence", ["userIds": [subject.idValue, stranger.idValue]], as: watcher)
        }
        let never = try await ask()
        #expect(never.map(\.online) == [false, false] && never.allSatisfy { $0.lastSeen == nil })

        let live = try await fixture.subscribe(subject, on: fixture.extra)
        #expect(try await ask()[0].online)
        // A stranger (no conversation with the watcher) who is online still reads as never seen,
        // while anyone sees their own presence.
        let strangerLive = try await fixture.subscribe(stranger)
        #expect(try await ask()[1] == Presence(userId: stranger.id, online: false, lastSeen: nil))
        let own: [Presence] = try await fixture.call("presence", ["userIds": [stranger.idValue]], as: stranger)
        #expect(own.first?.online == true)
        await strangerLive.close()
        // Still online well past the window while the stream is open.
        try await Task.sleep(for: MessagingStack.presenceWindow * 2)
        #expect(try await ask()[0].online)
        await live.close()
        let closedAt = Date()
        let about = MessagingStack.presence(of: subject)
        let changes = try await watching.wait(for: 2, timeout: .seconds(10), where: about)
        #expect(changes.map { $0["online"]?.boolValue } == [true, false])
        let after = try await ask()[0]
        #expect(!after.online)
        let lastSeen = try #require(after.lastSeen)
        #expect(abs(lastSeen.timeIntervalSince(closedAt)) < 1.5)
        let stored = try await fixture.stack.database.query(
            "SELECT last_seen FROM messaging.presence WHERE user_id = $1", [subject.id.value])
        #expect(stored.count == 1)

        // A call makes one online for the window, then offline again.
        _ = try await fixture.call("conversations", as: subject, decoding: Page<Conversation>.self)
        #expect(try await ask()[0].online)
        try await watching.wait(for: 4, timeout: .seconds(10), where: about)
        #expect(watching.events(where: about).map { $0["online"]?.boolValue } == [true, false, true, false])
        #expect(try await ask()[0].online == false)
    }

    @Test("lastSeen is stored before the sweep forgets the last call: a sweep that cannot store it leaves the user for the next")
    func lastSeenOutlivesAFailedSweep() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "seen")
        let (watcher, subject) = (users[0], users[1])
        let direct = try await fixture.direct(watcher, subject)
        try await fixture.markTookPart(subject, in: direct)
        let watching = try await fixture.subscribe(watcher)
        defer { Task { await watching.close() } }
        let live = try await fixture.subscribe(subject)
        // Storing the subject's lastSeen fails (as with Postgres unreachable) until the constraint goes.
        let constraint = "refuse_presence_\(subject.id.value)"
        try await fixture.stack.database.execute(
            "ALTER TABLE messaging.presence ADD CONSTRAINT \(constraint) CHECK (user_id <> \(subject.id.value)) NOT VALID")
        await live.close()
        let closedAt = Date()
        try await Task.sleep(for: MessagingStack.presenceWindow + .seconds(1))
        let during: [Presence] = try await fixture.call("presence", ["userIds": [subject.idValue]], as: watcher)
        try await fixture.stack.database.execute("ALTER TABLE messaging.presence DROP CONSTRAINT \(constraint)")
        #expect(during.first?.online == false)
        #expect(during.first?.lastSeen.map { abs($0.timeIntervalSince(closedAt)) < 1.5 } == true, "\(during)")

        let about = MessagingStack.presence(of: subject)
        let changes = try await watching.wait(for: 2, timeout: .seconds(10), where: about)
        #expect(changes.map { $0["online"]?.boolValue } == [true, false])
        let stored = try await fixture.stack.database.query(
            "SELECT last_seen FROM messaging.presence WHERE user_id = $1", [subject.id.value])
        let lastSeen = try #require(stored.first).decode(Date.self, at: 0)
        #expect(abs(lastSeen.timeIntervalSince(closedAt)) < 1.5)
    }

    /// Anyone can open a direct conversation with anyone: being put in one shows nothing of one's
    /// presence to its maker until one takes part (sends or reads there).
    @Test("presence stays hidden from a stranger who opened a conversation, until the user answers")
    func presenceHiddenFromWhoeverOpenedAConversation() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "shy")
        let (stranger, target) = (users[0], users[1])
        let direct = try await fixture.direct(stranger, target)
        let watching = try await fixture.subscribe(stranger)
        let live = try await fixture.subscribe(target)
        let ask = { () async throws -> Presence? in
            let presence: [Presence] = try await fixture.call("presence", ["userIds": [target.idValue]], as: stranger)
            return presence.first
        }
        #expect(try await ask() == Presence(userId: target.id, online: false, lastSeen: nil))
        let about = MessagingStack.presence(of: target)
        try await Task.sleep(for: .milliseconds(500))
        #expect(watching.events(where: about).isEmpty)

        _ = try await fixture.send("who is this?", to: direct, as: target)
        #expect(try await ask()?.online == true)
        await live.close()
        try await watching.wait(for: 1, timeout: .seconds(10), where: about)
        #expect(watching.events(where: about).map { $0["online"]?.boolValue } == [false])
        await watching.close()
    }

    @Test("a member who leaves gets no more events of the group")
    func leaverHearsNothing() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "leave")
        let group = try await fixture.group("quiet", by: users[0], with: [users[1], users[2]])
        let leaver = try await fixture.subscribe(users[2], on: fixture.extra)
        let stayer = try await fixture.subscribe(users[1], on: fixture.extra)
        defer { Task { await leaver.close(); await stayer.close() } }
        _ = try await fixture.send("before", to: group, as: users[0])
        let typing: @Sendable (JSONValue) -> Bool = { $0.isEvent("typing", in: group) }
        _ = try await fixture.call("typing", ["conversationId": group.idValue, "typing": true], as: users[0], decoding: JSONValue.self)
        try await leaver.wait(for: 1, where: typing)
        let answer = try await fixture.call("leave", ["conversationId": group.idValue], as: users[2], decoding: Conversation.self)
        // What the leaver may no longer see is not in the answer either.
        #expect(answer.lastMessage == nil && answer.unreadCount == 0)
        _ = try await fixture.send("after", to: group, as: users[0])
        let messages: @Sendable (JSONValue) -> Bool = { $0.isEvent("message", in: group) }
        try await stayer.wait(for: 2, where: messages)
        #expect(leaver.events(where: messages).compactMap { $0["message"]?["text"]?.stringValue } == ["before"])
        let left = leaver.events(where: { $0.isEvent("conversation", in: group) && $0["change"]?.stringValue == "memberLeft" })
        #expect(left.count == 1)
        // The typing lapse, 6 s on, goes to the members as they are then.
        try await stayer.wait(for: 2, timeout: .seconds(10), where: typing)
        try await Task.sleep(for: .milliseconds(200))
        #expect(stayer.events(where: typing).map { $0["typing"]?.boolValue } == [true, false])
        #expect(leaver.events(where: typing).map { $0["typing"]?.boolValue } == [true])
    }
    @Test("in a group, two who blocked one another hear nothing live of each other; the others hear both")
    func blockedMembersHearNothingOfEachOther() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "gblock")
        let (ana, ben, cat) = (users[0], users[1], users[2])
        let group = try await fixture.group("blocked within", by: ana, with: [ben, cat])
        _ = try await fixture.stack.call("social-graph", "graph.block", ["userId": ben.idValue], as: ana, decoding: JSONValue.self)
        let (anaLive, benLive, catLive) = (try await fixture.subscribe(ana), try await fixture.subscribe(ben), try await fixture.subscribe(cat))
        defer { Task { await anaLive.close(); await benLive.close(); await catLive.close() } }
        let fromBen = try await fixture.send("from ben", to: group, as: ben)
        _ = try await fixture.send("from ana", to: group, as: ana)
        _ = try await fixture.call("typing", ["conversationId": group.idValue, "typing": true], as: ben, decoding: JSONValue.self)
        _ = try await fixture.call(
            "react", ["messageId": .string(fromBen.id.description), "emoji": "👍"], as: cat, decoding: JSONValue.self)
        _ = try await fixture.call(
            "edit", ["messageId": .string(fromBen.id.description), "text": "from ben, edited"], as: ben, decoding: JSONValue.self)
        func texts(_ live: LiveStream) -> [String] {
            live.events(where: { $0.isEvent("message", in: group) }).compactMap { $0["message"]?["text"]?.stringValue }
        }
        let typing: @Sendable (JSONValue) -> Bool = { $0.isEvent("typing", in: group) }
        let edited: @Sendable (JSONValue) -> Bool = { $0.isEvent("edited", in: group) }
        // Cat hears everything; by the time she has, Ana and Ben would have heard too.
        try await catLive.wait(for: 2, where: { $0.isEvent("message", in: group) })
        try await catLive.wait(for: 1, where: edited)
        try await catLive.wait(for: 1, where: typing)
        try await anaLive.wait(for: 1, where: { $0.isEvent("reaction", in: group) })
        try await benLive.wait(for: 1, where: { $0.isEvent("reaction", in: group) })
        #expect(Set(texts(catLive)) == ["from ben", "from ana"])
        #expect(texts(anaLive) == ["from ana"] && texts(benLive) == ["from ben"])
        #expect(anaLive.events(where: typing).isEmpty && anaLive.events(where: edited).isEmpty)
        // The history still holds both for both.
        let history = try await fixture.call("history", ["conversationId": group.idValue], as: ana, decoding: JSONValue.self)
        let held = history["items"]?.arrayValue?.compactMap { $0["text"]?.stringValue } ?? []
        #expect(held.contains("from ben, edited") && held.contains("from ana"), "\(held)")
    }

    @Test("with social-graph unreachable, a group's messages still go out live to every member; a direct one is not sent")
    func groupsStayUpWithoutSocialGraph() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "nograph")
        let group = try await fixture.group("no graph", by: users[0], with: [users[1], users[2]])
        let direct = try await fixture.direct(users[0], users[1])
        let cut = try await fixture.stack.startExtraInstance(
            "messaging", environment: ["AVIARY_SOCIAL_GRAPH_ADDRESSES": "127.0.0.1:\(try freePort())"])
        let client = RPCClient(configuration: .init(addresses: [cut.rpcAddress]), logger: Logger(label: "no-graph"))
        func send(_ text: String, to conversation: Conversation) async throws -> JSONValue {
            try await client.call(
                "messaging.send", params: ["conversationId": JSONValue.string(conversation.id.description), "text": .string(text)],
                meta: RequestMeta(token: users[0].token), as: JSONValue.self)
        }
        let live = try await fixture.subscribe(users[2])
        defer { Task { await live.close() } }
        _ = try await send("still here", to: group)
        try await live.wait(where: { $0.isEvent("message", in: group) })
        #expect(live.events(where: { $0.isEvent("message", in: group) }).first?["message"]?["text"] == "still here")
        let refused = await rpcError { _ = try await send("not without knowing", to: direct) }
        #expect(refused?.reason == "unavailable", "\(String(describing: refused))")
    }

    @Test("new conversations, added members and renames reach every member")
    func conversationEvents() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "cev")
        let watcher = try await fixture.subscribe(users[1], on: fixture.extra)
        let newcomer = try await fixture.subscribe(users[2])
        defer { Task { await watcher.close(); await newcomer.close() } }
        let direct = try await fixture.direct(users[0], users[1])
        let group = try await fixture.group("first", by: users[0], with: [users[1]])
        _ = try await fixture.call("rename", ["conversationId": group.idValue, "title": "second"], as: users[1], decoding: Conversation.self)
        _ = try await fixture.call(
            "addMembers", ["conversationId": group.idValue, "memberIds": [users[2].idValue]], as: users[0], decoding: Conversation.self)
        let changes: @Sendable (JSONValue) -> Bool = { $0["type"]?.stringValue == "conversation" }
        let seen = try await watcher.wait(for: 4, where: changes)
        #expect(seen.map { $0["change"]?.stringValue ?? "" } == ["created", "created", "renamed", "membersAdded"])
        #expect(seen[0]["conversation"]?["id"]?.stringValue == direct.id.description)
        #expect(seen[2]["conversation"]?["title"]?.stringValue == "second")
        let joined = try await newcomer.wait(for: 1, where: changes)
        #expect(joined.first?["change"]?.stringValue == "membersAdded")
        #expect(joined.first?["userIds"]?.arrayValue?.compactMap(\.stringValue) == [users[2].id.description])
    }

    @Test("logging out ends the session's subscriptions on every instance at once, with a last event saying so")
    func logoutEndsSubscriptions() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "bye")
        let (a, b) = (users[0], users[1])
        let conversation = try await fixture.direct(a, b)
        let aHere = try await fixture.subscribe(a)
        let aThere = try await fixture.subscribe(a, on: fixture.extra)
        let bLive = try await fixture.subscribe(b, on: fixture.extra)
        defer { Task { await aHere.close(); await aThere.close(); await bLive.close() } }

        let _: JSONValue = try await fixture.stack.call("auth", "auth.logout", as: a)
        let ended: @Sendable (JSONValue) -> Bool = { $0["type"]?.stringValue == "unsubscribed" }
        for stream in [aHere, aThere] {
            #expect(try await stream.wait(for: 1, where: ended).first?["reason"]?.stringValue == "unauthenticated")
        }
        let message = try await fixture.send("after the logout", to: conversation, as: b)
        let delivered: @Sendable (JSONValue) -> Bool = { $0["message"]?["id"]?.stringValue == message.id.description }
        try await bLive.wait(for: 1, where: delivered)
        try await Task.sleep(for: .milliseconds(300))
        #expect(aHere.events(where: delivered).isEmpty && aThere.events(where: delivered).isEmpty)
        #expect(bLive.events(where: ended).isEmpty, "another user's subscription goes on")
        await #expect { _ = try await fixture.subscribe(a) } throws: { ($0 as? RPCError)?.reason == "unauthenticated" }
    }
}
