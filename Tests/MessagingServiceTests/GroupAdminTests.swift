import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import Testing
import TestSupport

/// Groups have an owner, admins and members: who may remove whom, change roles and hand the group
/// over; a removed member loses it at once; every change is a system message of the history,
/// which counts as nobody's unread.
@Suite("Group administration")
struct GroupAdminTests {
    @Test("roles: the owner promotes, admins remove members, ownership moves; each refusal; system messages")
    func roles() async throws {
        let fixture = try await MessagingStack.shared()
        let users = try await fixture.users(5, "adm")
        let (owner, admin, member, other, outsider) = (users[0], users[1], users[2], users[3], users[4])
        let group = try await fixture.group("admins", by: owner, with: [admin, member, other])
        #expect(group.ownerId == owner.id && group.adminIds.isEmpty)
        let listener = try await fixture.subscribe(member)
        defer { Task { await listener.close() } }
        func call(_ method: String, _ user: StackUser, as caller: StackUser, _ extra: [String: JSONValue] = [:]) async throws -> Conversation {
            try await fixture.call(method, ["conversationId": group.idValue, "userId": user.idValue].merging(extra) { $1 }, as: caller)
        }
        func refusal(_ method: String, _ user: StackUser, as caller: StackUser, _ extra: [String: JSONValue] = [:]) async -> RPCError? {
            await fixture.refusal(method, ["conversationId": group.idValue, "userId": user.idValue].merging(extra) { $1 }, as: caller)
        }

        // A member may do none of it; an outsider hears not_found.
        #expect(await refusal("removeMember", other, as: member)?.reason == "forbidden")
        #expect(await refusal("setRole", other, as: member, ["role": "admin"])?.reason == "forbidden")
        #expect(await refusal("transferOwnership", member, as: member)?.reason == "forbidden")
        #expect(await refusal("removeMember", other, as: outsider)?.reason == "not_found")
        #expect(await refusal("setRole", outsider, as: owner, ["role": "admin"])?.field == "userId")
        #expect(await refusal("setRole", admin, as: owner, ["role": "owner"])?.field == "role")
        #expect(await refusal("setRole", admin, as: owner, ["role": "boss"])?.field == "role")

        let promoted = try await call("setRole", admin, as: owner, ["role": "admin"])
        #expect(promoted.adminIds == [admin.id] && promoted.ownerId == owner.id)
        // An admin removes members, not the owner or themselves.
        #expect(await refusal("removeMember", owner, as: admin)?.reason == "forbidden")
        #expect(await refusal("removeMember", admin, as: admin)?.field == "userId")
        let smaller = try await call("removeMember", member, as: admin)
        #expect(!smaller.members.contains { $0.id == member.id })
        // The removed member heard it, and has nothing of the group any more.
        let heard = try await listener.wait { $0["type"] == "conversation" && $0["change"] == "memberRemoved" }
        #expect(heard.first?["userIds"]?.arrayValue?.compactMap { $0.stringValue } == [member.id.description])
        #expect(await fixture.refusal("history", ["conversationId": group.idValue], as: member)?.reason == "not_found")
        #expect(await fixture.refusal("send", ["conversationId": group.idValue, "text": "still here?"], as: member)?.reason == "not_found")
        _ = try await fixture.send("after the removal", to: group, as: owner)
        try await Task.sleep(for: .milliseconds(200))
        let missed = listener.events { $0["type"] == "message" && $0["message"]?["text"] == "after the removal" }
        #expect(missed.isEmpty)

        // The owner hands the group over and stays as an admin; the new owner's role is theirs alone.
        let handed = try await call("transferOwnership", admin, as: owner)
        #expect(handed.ownerId == admin.id && handed.adminIds == [owner.id])
        #expect(await refusal("removeMember", admin, as: owner)?.reason == "forbidden")
        #expect(await refusal("setRole", other, as: owner, ["role": "admin"])?.reason == "forbidden")
        // The owner leaving hands it to the admin who joined first.
        let after: Conversation = try await fixture.call("leave", ["conversationId": group.idValue], as: admin)
        #expect(after.ownerId == owner.id && after.adminIds.isEmpty)

        // Every change is in the history, oldest first, and none of it is unread.
        let history: Page<Message> = try await fixture.call(
            "history", ["conversationId": group.idValue, "order": "oldest", "limit": 20], as: other)
        let changes = history.items.compactMap(\.system).map { ($0.change, $0.actorId, $0.userIds, $0.role) }
        let expected: [(ConversationChange, EntityID, [EntityID], MemberRole?)] = [
            (.created, owner.id, [admin.id, member.id, other.id], nil), (.roleChanged, owner.id, [admin.id], .admin),
            (.memberRemoved, admin.id, [member.id], nil), (.ownershipTransferred, owner.id, [admin.id], nil),
            (.memberLeft, admin.id, [admin.id], nil), (.ownershipTransferred, admin.id, [owner.id], nil),
        ]
        #expect(changes.count == expected.count)
        for (seen, wanted) in zip(changes, expected) {
            #expect(seen.0 == wanted.0 && seen.1 == wanted.1 && seen.2 == wanted.2 && seen.3 == wanted.3, "\(seen)")
        }
        #expect(history.items.allSatisfy { $0.kind == .system ? $0.text == nil && $0.sender.id == $0.system?.actorId : true })
        let list: Page<Conversation> = try await fixture.call("conversations", as: other)
        #expect(list.items.first { $0.id == group.id }?.unreadCount == 1)  // "after the removal" alone
    }
}
