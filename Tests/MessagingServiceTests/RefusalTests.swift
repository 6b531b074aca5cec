import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import Testing
import TestSupport

@Suite("Refusals")
struct RefusalTests {
    /// Every method about one conversation, with params that would otherwise succeed.
    private static func conversationCalls(_ conversation: Conversation, message: Message, someone: StackUser)
        -> [(String, [String: JSONValue])]
    {
        let id = conversation.idValue
        return [
            ("send", ["conversationId": id, "text": "let me in"]),
            ("history", ["conversationId": id]),
            ("markRead", ["conversationId": id, "upTo": .string(message.id.description)]),
            ("typing", ["conversationId": id, "typing": true]),
            ("addMembers", ["conversationId": id, "memberIds": [someone.idValue]]),
            ("rename", ["conversationId": id, "title": "mine now"]),
            ("leave", ["conversationId": id]),
        ]
    }

    @Test("a non-member gets not_found from every method of a conversation, the same as for none at all")
    func nonMember() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(4, "nm")
        let group = try await fixture.group("private", by: users[0], with: [users[1]])
        let message = try await fixture.send("secret", to: group, as: users[0])
        for (method, params) in Self.conversationCalls(group, message: message, someone: users[3]) {
            let refusal = await fixture.refusal(method, params, as: users[2])
            #expect(refusal?.reason == "not_found", "\(method)")
            #expect(refusal?.message.contains("secret") == false && refusal?.message.contains("private") == false)
            var missing = params
            missing["conversationId"] = "999999999999999"
            let none = await fixture.refusal(method, missing, as: users[2])
            #expect(none?.reason == "not_found" && none?.message.replacingOccurrences(of: "999999999999999", with: group.id.description) == refusal?.message, "\(method)")
        }
        // Nothing changed and nothing leaked into their list.
        #expect(try await fixture.call("conversations", as: users[2], decoding: Page<Conversation>.self).items.isEmpty)
        let history: Page<Message> = try await fixture.call("history", ["conversationId": group.idValue], as: users[1])
        #expect(history.items.filter { $0.kind != .system }.map(\.text) == ["secret"])
    }

    @Test("a member who left loses access at once")
    func removedMember() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "gone")
        let group = try await fixture.group("was here", by: users[0], with: [users[1], users[2]])
        let message = try await fixture.send("hi", to: group, as: users[0])
        _ = try await fixture.call("leave", ["conversationId": group.idValue], as: users[2], decoding: Conversation.self)
        for (method, params) in Self.conversationCalls(group, message: message, someone: users[1]) {
            #expect(await fixture.refusal(method, params, as: users[2])?.reason == "not_found", "\(method)")
        }
        let member: [String: Bool] = try await fixture.stack.callInternal(
            "messaging", "messaging.isMember", ["conversationId": group.idValue, "userId": users[2].idValue])
        #expect(member["member"] == false)
    }

    @Test("every user method needs a token")
    func noToken() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "tok")
        let conversation = try await fixture.direct(users[0], users[1])
        let message = try await fixture.send("x", to: conversation, as: users[0])
        var calls = Self.conversationCalls(conversation, message: message, someone: users[1])
        calls += [
            ("openDirect", ["userId": users[1].idValue]), ("createGroup", ["title": "t", "memberIds": [users[1].idValue]]),
            ("conversations", [:]), ("presence", ["userIds": [users[1].idValue]]), ("subscribe", [:]),
            ("unsubscribe", ["subscription": "1"]),
        ]
        for (method, params) in calls {
            #expect(await fixture.refusal(method, params, as: nil)?.reason == "unauthenticated", "\(method)")
        }
        var forged = users[0]
        forged.token += "x"
        #expect(await fixture.refusal("conversations", as: forged)?.reason == "unauthenticated")
    }

    @Test("bad input is refused naming the field")
    func badInput() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "bad")
        let (a, b) = (users[0], users[1])
        let conversation = try await fixture.direct(a, b)
        let id = conversation.idValue
        let cases: [(String, [String: JSONValue], String)] = [
            ("openDirect", ["userId": a.idValue], "userId"),
            ("openDirect", ["userId": "12ab"], "userId"),
            ("createGroup", ["title": "   ", "memberIds": [b.idValue]], "title"),
            ("createGroup", ["title": .string(String(repeating: "é", count: 101)), "memberIds": [b.idValue]], "title"),
            ("createGroup", ["title": "alone", "memberIds": [a.idValue]], "memberIds"),
            ("rename", ["conversationId": id, "title": ""], "title"),
            ("send", ["conversationId": id, "text": .string(String(repeating: "😀", count: 4001))], "text"),
            ("send", ["conversationId": id, "text": "  "], "text"),
            ("send", ["conversationId": id], "text"),
            ("send", ["conversationId": "-5", "text": "x"], "conversationId"),
            ("send", ["conversationId": id, "text": "x", "clientMessageId": .string(String(repeating: "k", count: 129))], "clientMessageId"),
            ("history", ["conversationId": id, "limit": 0], "limit"),
            ("history", ["conversationId": id, "limit": 101], "limit"),
            ("history", ["conversationId": id, "cursor": "not a cursor"], "cursor"),
            ("conversations", ["cursor": "%%%"], "cursor"),
            ("conversations", ["cursor": .string(KeysetCursor(key: -1, id: -1).encoded)], "cursor"),
            ("conversations", ["cursor": .string(KeysetCursor(key: 0, id: 0).encoded)], "cursor"),
            ("markRead", ["conversationId": id, "upTo": "x"], "upTo"),
            ("presence", ["userIds": .array((1...101).map { .string(String($0)) })], "userIds"),
            ("addMembers", ["conversationId": id, "memberIds": [b.idValue]], "conversationId"),
            ("rename", ["conversationId": id, "title": "direct"], "conversationId"),
            ("leave", ["conversationId": id], "conversationId"),
        ]
        for (method, params, field) in cases {
            let refusal = await fixture.refusal(method, params, as: a)
            #expect(refusal?.field == field, "\(method) \(params) answered \(String(describing: refusal))")
        }
        // A text of exactly 4,000 scalars is fine.
        let longest = try await fixture.send(String(repeating: "😀", count: 4000), to: conversation, as: a)
        #expect(longest.text?.unicodeScalars.count == 4000)
        #expect(await fixture.refusal("openDirect", ["userId": "999999999999"], as: a)?.reason == "not_found")
        #expect(
            await fixture.refusal("markRead", ["conversationId": id, "upTo": "999999999999"], as: a)?.reason == "not_found")
        #expect(await fixture.refusal("unsubscribe", ["subscription": "77"], as: a)?.reason == "not_found")
        // An id as long as a frame allows is not echoed whole.
        let long = await fixture.refusal("unsubscribe", ["subscription": .string(String(repeating: "7", count: 100_000))], as: a)
        #expect(long?.reason == "not_found" && (long?.message.count ?? .max) < 200)
    }
}
