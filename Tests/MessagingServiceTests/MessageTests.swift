import AviaryAPI
import AviaryJSON
import Foundation
import Logging
import Postgres
import RPC
import Redis
import Testing
import TestSupport

@Suite("Messages")
struct MessageTests {
    @Test("the same clientMessageId from the same sender returns the first message")
    func idempotentSend() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "idem")
        let conversation = try await fixture.direct(users[0], users[1])
        let first = try await fixture.send("once", to: conversation, as: users[0], clientMessageId: "c-1")
        let retried = try await fixture.send("once again?", to: conversation, as: users[0], clientMessageId: "c-1")
        #expect(retried.id == first.id && retried.text == "once")
        // Racing retries store one message too.
        let raced = try await withThrowingTaskGroup(of: EntityID.self) { group in
            for _ in 0..<6 { group.addTask { try await fixture.send("race", to: conversation, as: users[0], clientMessageId: "c-2").id } }
            return try await group.reduce(into: Set<EntityID>()) { $0.insert($1) }
        }
        #expect(raced.count == 1)
        // The other member's same key is their own message.
        let theirs = try await fixture.send("mine", to: conversation, as: users[1], clientMessageId: "c-1")
        #expect(theirs.id != first.id)
        let history: Page<Message> = try await fixture.call("history", ["conversationId": conversation.idValue], as: users[1])
        #expect(history.items.map(\.text) == ["mine", "race", "once"])
    }

    @Test("10,000 messages page forwards and backwards with no gaps or repeats")
    func tenThousand() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "many")
        let conversation = try await fixture.direct(users[0], users[1])
        let total = 10_000
        // Stored in one statement, as the service stores them: seq 1…n, ids growing with seq.
        let base = Int64.random(in: (1 << 58)...(1 << 59))
        _ = try await fixture.stack.database.execute(
            """
            WITH inserted AS (
                INSERT INTO messaging.messages (id, conversation_id, seq, sender_id, text, kind, created_at)
                SELECT $1 + n, $2, n, CASE WHEN n % 2 = 0 THEN $3 ELSE $4 END, 'message ' || n, 'text',
                       now() - (($5 - n) * INTERVAL '1 millisecond')
                FROM generate_series(1, $5) AS n
                RETURNING id
            )
            UPDATE messaging.conversations SET last_seq = $5, last_message_id = $1 + $5 WHERE id = $2
            """, [base, conversation.id.value, users[0].id.value, users[1].id.value, Int64(total)])
        for order in ["newest", "oldest"] {
            var texts: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                var params: [String: JSONValue] = ["conversationId": conversation.idValue, "limit": 100, "order": .string(order)]
                if let cursor { params["cursor"] = .string(cursor) }
                let page: Page<Message> = try await fixture.call("history", params, as: users[0])
                texts += page.items.compactMap(\.text)
                cursor = page.nextCursor
                pages += 1
            } while cursor != nil && pages <= 101
            let expected = (1...total).map { "message \($0)" }
            #expect(texts == (order == "oldest" ? expected : expected.reversed()), "order \(order)")
        }
        let list: Page<Conversation> = try await fixture.call("conversations", as: users[1])
        let seen = try #require(list.items.first { $0.id == conversation.id })
        #expect(seen.unreadCount == Int64(total) && seen.lastMessage?.text == "message \(total)")
        // A cursor made for one order is refused for the other.
        let page: Page<Message> = try await fixture.call(
            "history", ["conversationId": conversation.idValue, "limit": 5], as: users[0])
        let crossed = await fixture.refusal(
            "history",
            ["conversationId": conversation.idValue, "order": "oldest", "cursor": .string(try #require(page.nextCursor))],
            as: users[0])
        #expect(crossed?.field == "cursor")
    }

    @Test("the message event names the recipients who had no open subscription")
    func offlineRecipients() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "off")
        let group = try await fixture.group("offline", by: users[0], with: [users[1], users[2]])
        let live = try await fixture.subscribe(users[1], on: fixture.extra)
        defer { Task { await live.close() } }
        let message = try await fixture.send("who hears this", to: group, as: users[0])
        let payload = try await streamPayload(of: message.id, fixture: fixture)
        #expect(payload["offlineRecipientIds"]?.arrayValue?.compactMap(\.stringValue) == [users[2].id.description])
        #expect(payload["senderId"]?.stringValue == users[0].id.description)
        #expect(payload["conversationId"]?.stringValue == group.id.description)
        #expect(payload["createdAt"]?.stringValue == RFC3339.format(message.createdAt))
    }

    @Test("a member who muted a conversation is not among the recipients notifications hears of; unread counts go on")
    func mutedConversation() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "mut")
        let group = try await fixture.group("quiet please", by: users[0], with: [users[1], users[2]])
        let muted: Conversation = try await fixture.call(
            "mute", ["conversationId": .string(group.id.description), "muted": true], as: users[2])
        #expect(muted.muted && muted.unreadCount == 0)
        let first = try await fixture.send("only one of you hears", to: group, as: users[0])
        let payload = try await streamPayload(of: first.id, fixture: fixture)
        #expect(payload["offlineRecipientIds"]?.arrayValue?.compactMap(\.stringValue) == [users[1].id.description])
        let page: Page<Conversation> = try await fixture.call("conversations", as: users[2])
        #expect(page.items.first { $0.id == group.id }.map { ($0.muted, $0.unreadCount) } ?? (false, 0) == (true, 1))
        // The others see it as they did; unmuted, the member hears again.
        let seen: Page<Conversation> = try await fixture.call("conversations", as: users[1])
        #expect(seen.items.first { $0.id == group.id }?.muted == false)
        _ = try await fixture.call(
            "mute", ["conversationId": .string(group.id.description), "muted": false], as: users[2], decoding: Conversation.self)
        let second = try await fixture.send("now both of you", to: group, as: users[0])
        let heard = try await streamPayload(of: second.id, fixture: fixture)
        #expect(Set(heard["offlineRecipientIds"]?.arrayValue?.compactMap(\.stringValue) ?? []) == [users[1].id.description, users[2].id.description])
        // Not a member: not found, as for every other conversation method.
        let outsider = try await fixture.users(1, "out")[0]
        let refused = await rpcError {
            _ = try await fixture.call(
                "mute", ["conversationId": .string(group.id.description), "muted": true], as: outsider, decoding: Conversation.self)
        }
        #expect(refused?.reason == "not_found")
    }

    @Test("a message whose recipients all had a subscription sends no event on to notifications")
    func noEventWhenEveryoneIsOnline() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "onl")
        let direct = try await fixture.direct(users[0], users[1])
        let live = try await fixture.subscribe(users[1], on: fixture.extra)
        defer { Task { await live.close() } }
        let heard = try await fixture.send("everyone is here", to: direct, as: users[0])
        // A later message with someone offline: once its event is in the stream, the earlier one's
        // would be too (the relay keeps the outbox's order).
        let group = try await fixture.group("half here", by: users[0], with: [users[1], users[2]])
        let unheard = try await fixture.send("someone is away", to: group, as: users[0])
        _ = try await streamPayload(of: unheard.id, fixture: fixture)
        await #expect(throws: RPCError.self) { _ = try await streamPayload(of: heard.id, fixture: fixture, attempts: 1) }
    }

    /// The payload of the `messaging`/`message` event of `messageID`, once the relay moved it to its stream.
    private func streamPayload(of messageID: EntityID, fixture: MessagingStack, attempts: Int = 200) async throws -> JSONValue {
        for _ in 0..<attempts {
            let reply = try await fixture.stack.redis.send(["XREVRANGE", "aviary:events:messaging", "+", "-", "COUNT", "500"])
            for entry in reply.array ?? [] {
                let fields = entry.array?.last?.array ?? []
                for index in stride(from: 0, to: fields.count - 1, by: 2) where fields[index].string == "payload" {
                    let payload = try RawJSON(unchecked: Array((fields[index + 1].string ?? "").utf8)).decode(JSONValue.self)
                    if payload["messageId"]?.stringValue == messageID.description { return payload }
                }
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw RPCError.notFound("no event of message \(messageID)")
    }

    @Test("a message with media needs the media service; without it the send is unavailable")
    func mediaNeedsTheMediaService() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "media")
        let conversation = try await fixture.direct(users[0], users[1])
        let refusal = await fixture.refusal(
            "send", ["conversationId": conversation.idValue, "mediaId": "12345"], as: users[0])
        #expect(refusal?.reason == "unavailable")
    }

    @Test("with auth unreachable a send fails before it stores anything, so a retry cannot send twice")
    func authDownStoresNothing() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "noauth")
        let conversation = try await fixture.direct(users[0], users[1])
        let process = try await fixture.stack.startExtraInstance(
            "messaging", environment: ["AVIARY_AUTH_ADDRESSES": "127.0.0.1:\(try freePort())"])
        let client = RPCClient(configuration: .init(addresses: [process.rpcAddress]), logger: .init(label: "noauth"))
        defer { Task { await client.shutdown(); process.kill() } }
        let failure = await rpcError {
            _ = try await client.call(
                "messaging.send", params: ["conversationId": conversation.idValue, "text": "not yet"],
                meta: RequestMeta(token: users[0].token), as: JSONValue.self)
        }
        #expect(failure?.reason == "unavailable")
        let stored = try await fixture.stack.database.query(
            "SELECT count(*) FROM messaging.messages WHERE conversation_id = $1", [conversation.id.value])
        #expect(try stored.first?.decode(Int64.self, at: 0) == 0)
    }
}
