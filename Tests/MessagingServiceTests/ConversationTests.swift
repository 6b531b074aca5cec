import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import Testing
import TestSupport

@Suite("Conversations")
struct ConversationTests {
    /// markRead answers the unread count after the marker as it stands, even when another device
    /// moved it further a moment before (this call then moves nothing).
    @Test func markReadCountsFromAMarkerAnotherDeviceMovedMeanwhile() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "devices")
        let (a, b) = (users[0], users[1])
        let direct = try await fixture.direct(a, b)
        var messages: [Message] = []
        for text in ["one", "two", "three"] { messages.append(try await fixture.send(text, to: direct, as: a)) }
        let sent = messages
        let marking = try await holdingTransaction(
            "UPDATE messaging.members SET read_seq = 3, read_message_id = $3 WHERE conversation_id = $1 AND user_id = $2",
            [Int64(direct.id.value), Int64(b.id.value), Int64(sent[2].id.value)], on: fixture.stack.database
        ) {
            let marking = Task { () throws -> [String: Int64] in
                try await fixture.call("markRead", ["conversationId": .string(direct.id.description), "upTo": .string(sent[0].id.description)], as: b)
            }
            try await Task.sleep(for: .milliseconds(300))  // waiting on the member row
            return marking
        }
        #expect(try await marking.value["unreadCount"] == 0)
    }

    @Test("openDirect makes one conversation per pair, from either side")
    func directIsOnePerPair() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "dir")
        let first = try await fixture.direct(users[0], users[1])
        let again = try await fixture.direct(users[0], users[1])
        let fromOther = try await fixture.direct(users[1], users[0])
        #expect(first.id == again.id && first.id == fromOther.id)
        #expect(first.kind == .direct && first.title == nil && first.lastMessage == nil && first.unreadCount == 0)
        #expect(Set(first.members.map(\.id)) == Set(users.map(\.id)))
        #expect(first.members.first { $0.id == users[1].id }?.username == users[1].username)
    }

    @Test("openDirect races make one conversation")
    func directRace() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(2, "race")
        let ids = try await withThrowingTaskGroup(of: EntityID.self) { group in
            for index in 0..<8 {
                group.addTask { try await fixture.direct(users[index % 2], users[1 - index % 2]).id }
            }
            return try await group.reduce(into: Set<EntityID>()) { $0.insert($1) }
        }
        #expect(ids.count == 1)
    }

    @Test("a group: create, send, unread counts, read, rename, add, leave")
    func groupFlow() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(4, "grp")
        let (a, b, c, d) = (users[0], users[1], users[2], users[3])
        let group = try await fixture.group("Trip 'plans'; DROP TABLE x; --", by: a, with: [b, c])
        #expect(group.kind == .group && group.title == "Trip 'plans'; DROP TABLE x; --")
        // Members come in the order they joined (those who joined together by id).
        #expect(group.members.map(\.id) == [a.id, b.id, c.id].sorted())

        let first = try await fixture.send("hello 👋🏽", to: group, as: a)
        #expect(first.text == "hello 👋🏽" && first.kind == .text && first.sender.id == a.id && first.readBy == [a.id])
        _ = try await fixture.send("second", to: group, as: a)
        let bList: Page<Conversation> = try await fixture.call("conversations", as: b)
        let seen = try #require(bList.items.first { $0.id == group.id })
        #expect(seen.unreadCount == 2 && seen.lastMessage?.text == "second")
        #expect(try await fixture.call("conversations", as: a, decoding: Page<Conversation>.self).items.first { $0.id == group.id }?.unreadCount == 0)

        let unread: [String: Int64] = try await fixture.call(
            "markRead", ["conversationId": group.idValue, "upTo": .string(first.id.description)], as: b)
        #expect(unread["unreadCount"] == 1)
        let history: Page<Message> = try await fixture.call("history", ["conversationId": group.idValue], as: c)
        // The history opens with the system message that records the group's creation.
        #expect(history.items.map(\.text) == ["second", "hello 👋🏽", nil])
        #expect(history.items.last?.system == SystemChange(change: .created, actorId: a.id, userIds: [b.id, c.id]))
        #expect(Set(history.items[1].readBy) == [a.id, b.id] && history.items[0].readBy == [a.id])
        // Marking an older message changes nothing.
        let again: [String: Int64] = try await fixture.call(
            "markRead", ["conversationId": group.idValue, "upTo": .string(first.id.description)], as: b)
        #expect(again["unreadCount"] == 1)

        let renamed: Conversation = try await fixture.call(
            "rename", ["conversationId": group.idValue, "title": "  New name  "], as: b)
        #expect(renamed.title == "New name")

        let grown: Conversation = try await fixture.call(
            "addMembers", ["conversationId": group.idValue, "memberIds": [d.idValue, b.idValue]], as: c)
        #expect(grown.members.map(\.id) == [a.id, b.id, c.id].sorted() + [d.id])
        let dView = try #require(try await fixture.call("conversations", as: d, decoding: Page<Conversation>.self).items.first)
        #expect(dView.id == group.id && dView.unreadCount == 0 && dView.title == "New name")
        #expect(try await Self.texts(fixture, group, as: d) == ["second", "hello 👋🏽"])

        let left: Conversation = try await fixture.call("leave", ["conversationId": group.idValue], as: c)
        #expect(left.members.map(\.id) == [a.id, b.id].sorted() + [d.id])
        #expect(try await fixture.call("conversations", as: c, decoding: Page<Conversation>.self).items.isEmpty)
        #expect(await fixture.refusal("history", ["conversationId": group.idValue], as: c)?.reason == "not_found")
        // Added back, the member sees it again.
        _ = try await fixture.call(
            "addMembers", ["conversationId": group.idValue, "memberIds": [c.idValue]], as: a, decoding: Conversation.self)
        #expect(try await Self.texts(fixture, group, as: c) == ["second", "hello 👋🏽"])
    }

    /// The texts of the messages members sent to `group`, newest first (no system messages).
    static func texts(_ fixture: MessagingStack, _ group: Conversation, as user: StackUser) async throws -> [String?] {
        let history: Page<Message> = try await fixture.call("history", ["conversationId": group.idValue], as: user)
        return history.items.filter { $0.kind != .system }.map(\.text)
    }

    @Test("conversations come most recently updated first, in keyset pages")
    func listOrder() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(4, "ord")
        let me = users[0]
        var conversations: [Conversation] = []
        for other in users.dropFirst() { conversations.append(try await fixture.direct(me, other)) }
        _ = try await fixture.send("bump", to: conversations[0], as: users[1])
        var ids: [EntityID] = []
        var cursor: String?
        repeat {
            var params: [String: JSONValue] = ["limit": 1]
            if let cursor { params["cursor"] = .string(cursor) }
            let page: Page<Conversation> = try await fixture.call("conversations", params, as: me)
            ids += page.items.map(\.id)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(ids == [conversations[0].id, conversations[2].id, conversations[1].id])
    }

    @Test("a group holds at most 256 members, the creator included")
    func groupLimit() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "big")
        // Ids past 255 others are refused before anyone is looked up.
        let tooMany = (1...256).map { JSONValue.string(String($0)) }
        let refusal = await fixture.refusal(
            "createGroup", ["title": "big", "memberIds": .array(tooMany)], as: users[0])
        #expect(refusal?.reason == "validation" && refusal?.field == "memberIds")
        let unknown = await fixture.refusal(
            "createGroup", ["title": "ghosts", "memberIds": [users[1].idValue, "999999999999"]], as: users[0])
        #expect(unknown?.reason == "not_found")
    }

    @Test("isMember answers services only")
    func isMember() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(3, "mem")
        let conversation = try await fixture.direct(users[0], users[1])
        let yes: [String: Bool] = try await fixture.stack.callInternal(
            "messaging", "messaging.isMember", ["conversationId": conversation.idValue, "userId": users[1].idValue])
        let no: [String: Bool] = try await fixture.stack.callInternal(
            "messaging", "messaging.isMember", ["conversationId": conversation.idValue, "userId": users[2].idValue])
        #expect(yes["member"] == true && no["member"] == false)
        let asUser = await fixture.refusal(
            "isMember", ["conversationId": conversation.idValue, "userId": users[1].idValue], as: users[0])
        #expect(asUser?.reason == "forbidden")
    }
    @Test("rpc.discover lists every messaging method with its description")
    func discover() async throws {
        let fixture = try await MessagingStack.shared()
        let document: JSONValue = try await fixture.stack.call("messaging", "rpc.discover")
        let methods = document["methods"]?.arrayValue ?? []
        let described = Set(methods.compactMap { method -> String? in
            guard let name = method["name"]?.stringValue, !(method["description"]?.stringValue ?? method["summary"]?.stringValue ?? "").isEmpty
            else { return nil }
            return name
        })
        let expected = [
            "openDirect", "createGroup", "addMembers", "leave", "rename", "conversations", "send", "history", "markRead",
            "typing", "presence", "subscribe", "unsubscribe", "isMember",
        ].map { "messaging.\($0)" }
        #expect(Set(expected).isSubset(of: described))
    }
}
