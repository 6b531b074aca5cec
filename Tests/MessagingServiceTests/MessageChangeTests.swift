import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import Testing
import TestSupport

/// A message after it is sent: edited by its sender within 15 minutes, deleted for everyone (a
/// tombstone) or for oneself, reacted to, replied to; every member hears each change live.
@Suite("Message changes")
struct MessageChangeTests {
    @Test("an edit within the window: editedAt, the new text in the history and live; refused for others, late or deleted")
    func edits() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "edit")
        let group = try await fixture.group("edits", by: users[0], with: [users[1]])
        let listener = try await fixture.subscribe(users[1])
        defer { Task { await listener.close() } }
        let sent = try await fixture.send("helo", to: group, as: users[0])
        let message = JSONValue.string(sent.id.description)
        let edited: Message = try await fixture.call("edit", ["messageId": message, "text": "hello"], as: users[0])
        #expect(edited.text == "hello" && edited.editedAt != nil && edited.id == sent.id && !edited.deleted)
        let heard = try await listener.wait { $0["type"] == "edited" && $0["message"]?["id"] == message }
        #expect(heard.first?["message"]?["text"] == "hello")
        let history: Page<Message> = try await fixture.call("history", ["conversationId": group.idValue], as: users[1])
        #expect(history.items.first?.text == "hello" && history.items.first?.editedAt != nil)

        #expect(await fixture.refusal("edit", ["messageId": message, "text": "mine now"], as: users[1])?.reason == "forbidden")
        #expect(await fixture.refusal("edit", ["messageId": message, "text": "who?"], as: users[2])?.reason == "not_found")
        #expect(await fixture.refusal("edit", ["messageId": message, "text": " "], as: users[0])?.field == "text")
        let long = JSONValue.string(String(repeating: "a", count: TextRules.messageLimit + 1))
        #expect(await fixture.refusal("edit", ["messageId": message, "text": long], as: users[0])?.field == "text")
        // Sent 16 minutes ago: too late.
        _ = try await fixture.stack.database.execute(
            "UPDATE messaging.messages SET created_at = now() - interval '16 minutes' WHERE id = $1", [sent.id.value])
        let late = await fixture.refusal("edit", ["messageId": message, "text": "too late"], as: users[0])
        #expect(late?.reason == "forbidden" && late?.message.contains("15 minutes") == true)
        let other = try await fixture.send("to delete", to: group, as: users[0])
        let _: Empty = try await fixture.call("delete", ["messageId": .string(other.id.description), "forEveryone": true], as: users[0])
        #expect(await fixture.refusal("edit", ["messageId": .string(other.id.description), "text": "x"], as: users[0])?.reason == "conflict")
    }

    @Test("deleted for everyone: a tombstone without text or media, heard live; for oneself: gone from one history only")
    func deletes() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "del")
        let group = try await fixture.group("deletes", by: users[0], with: [users[1]])
        let listener = try await fixture.subscribe(users[1])
        defer { Task { await listener.close() } }
        let first = try await fixture.send("first", to: group, as: users[0])
        let second = try await fixture.send("second", to: group, as: users[0])
        let (firstID, secondID) = (JSONValue.string(first.id.description), JSONValue.string(second.id.description))

        #expect(await fixture.refusal("delete", ["messageId": firstID, "forEveryone": true], as: users[1])?.reason == "forbidden")
        #expect(await fixture.refusal("delete", ["messageId": firstID], as: users[2])?.reason == "not_found")
        let _: Empty = try await fixture.call("delete", ["messageId": firstID, "forEveryone": true], as: users[0])
        let _: Empty = try await fixture.call("delete", ["messageId": firstID, "forEveryone": true], as: users[0])  // idempotent
        let heard = try await listener.wait { $0["type"] == "deleted" && $0["messageId"] == firstID }
        #expect(heard.count == 1 && heard.first?["forEveryone"] == true)
        for user in [users[0], users[1]] {
            let history: Page<Message> = try await fixture.call("history", ["conversationId": group.idValue], as: user)
            let tombstone = try #require(history.items.first { $0.id == first.id })
            #expect(tombstone.deleted && tombstone.text == nil && tombstone.media == nil)
        }
        #expect(await fixture.refusal("react", ["messageId": firstID, "emoji": "👍"], as: users[1])?.reason == "conflict")

        // For oneself: the other member still has it.
        let _: Empty = try await fixture.call("delete", ["messageId": secondID], as: users[1])
        let _: Empty = try await fixture.call("delete", ["messageId": secondID], as: users[1])  // idempotent
        let theirs: Page<Message> = try await fixture.call("history", ["conversationId": group.idValue], as: users[1])
        #expect(!theirs.items.contains { $0.id == second.id })
        let senders: Page<Message> = try await fixture.call("history", ["conversationId": group.idValue], as: users[0])
        #expect(senders.items.first { $0.id == second.id }?.text == "second")
        // Nor is it their conversation's last message any more; the sender's still is.
        let listed: Page<Conversation> = try await fixture.call("conversations", [:], as: users[1])
        #expect(listed.items.first { $0.id == group.id }?.lastMessage?.id == first.id)
        let sendersList: Page<Conversation> = try await fixture.call("conversations", [:], as: users[0])
        #expect(sendersList.items.first { $0.id == group.id }?.lastMessage?.id == second.id)
        #expect(listener.events { $0["type"] == "deleted" && $0["messageId"] == secondID }.count <= 2)
    }

    @Test("reactions: one per member, toggled and replaced, counted with reactedByMe, heard live")
    func reactions() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(4, "react")
        let group = try await fixture.group("reactions", by: users[0], with: [users[1], users[2]])
        let listener = try await fixture.subscribe(users[0])
        defer { Task { await listener.close() } }
        let sent = try await fixture.send("react to me", to: group, as: users[0])
        let message = JSONValue.string(sent.id.description)
        func react(_ emoji: String, as user: StackUser) async throws -> Message {
            try await fixture.call("react", ["messageId": message, "emoji": .string(emoji)], as: user)
        }
        _ = try await react("👍", as: users[1])
        var seen = try await react("👍", as: users[2])
        #expect(seen.reactions == [Reaction(emoji: "👍", count: 2, reactedByMe: true)])
        seen = try await react("❤️", as: users[2])  // replaces their 👍
        #expect(Set(seen.reactions) == [Reaction(emoji: "👍", count: 1, reactedByMe: false), Reaction(emoji: "❤️", count: 1, reactedByMe: true)])
        seen = try await react("❤️", as: users[2])  // taken back
        #expect(seen.reactions == [Reaction(emoji: "👍", count: 1, reactedByMe: false)])
        let events = try await listener.wait(for: 4) { $0["type"] == "reaction" && $0["messageId"] == message }
        #expect(events.count == 4)
        #expect(events.last?["emoji"] == .null && events.last?["userId"]?.stringValue == users[2].id.description)
        let history: Page<Message> = try await fixture.call("history", ["conversationId": group.idValue], as: users[1])
        #expect(history.items.first { $0.id == sent.id }?.reactions == [Reaction(emoji: "👍", count: 1, reactedByMe: true)])

        for bad in ["", "a", "1", "👍👍", "hello", String(repeating: "\u{1F44D}\u{200D}", count: 9)] {
            #expect(await fixture.refusal("react", ["messageId": message, "emoji": .string(bad)], as: users[1])?.field == "emoji", "\(bad)")
        }
        #expect(await fixture.refusal("react", ["messageId": message, "emoji": "👍"], as: users[3])?.reason == "not_found")
        #expect(try await react("🇫🇷", as: users[1]).reactions.contains { $0.emoji == "🇫🇷" && $0.reactedByMe })
        #expect(try await react("👍🏽", as: users[1]).reactions.contains { $0.emoji == "👍🏽" })
    }

    @Test("a reply quotes its message in the answer, the history and live; only a message of the same conversation")
    func replies() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "reply")
        let conversation = try await fixture.direct(users[0], users[1])
        let elsewhere = try await fixture.group("elsewhere", by: users[0], with: [users[2]])
        let listener = try await fixture.subscribe(users[0])
        defer { Task { await listener.close() } }
        let original = try await fixture.send("lunch?", to: conversation, as: users[0])
        let foreign = try await fixture.send("not here", to: elsewhere, as: users[0])
        func reply(_ text: String, to id: EntityID) async throws -> Message {
            try await fixture.call(
                "send", ["conversationId": conversation.idValue, "text": .string(text), "replyTo": .string(id.description)],
                as: users[1])
        }
        let answer = try await reply("yes!", to: original.id)
        #expect(answer.replyTo?.id == original.id && answer.replyTo?.text == "lunch?")
        #expect(answer.replyTo?.sender.id == users[0].id && answer.replyTo?.deleted == false)
        let heard = try await listener.wait { $0["type"] == "message" && $0["message"]?["id"]?.stringValue == answer.id.description }
        #expect(heard.first?["message"]?["replyTo"]?["text"] == "lunch?")
        let refused = await fixture.refusal(
            "send", ["conversationId": conversation.idValue, "text": "x", "replyTo": .string(foreign.id.description)], as: users[1])
        #expect(refused?.field == "replyTo")
        // Deleted for everyone, the quote keeps no text.
        let _: Empty = try await fixture.call("delete", ["messageId": .string(original.id.description), "forEveryone": true], as: users[0])
        let history: Page<Message> = try await fixture.call("history", ["conversationId": conversation.idValue], as: users[1])
        let quoted = try #require(history.items.first { $0.id == answer.id }?.replyTo)
        #expect(quoted.deleted && quoted.text == nil)
        let list: Page<Conversation> = try await fixture.call("conversations", as: users[1])
        #expect(list.items.first { $0.id == conversation.id }?.lastMessage?.replyTo?.id == original.id)
    }
}
