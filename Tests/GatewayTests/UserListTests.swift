import AviaryJSON
import Foundation
import Testing
import TestSupport

/// Lists end to end through the edge: a user's private lists of whom they follow, read as
/// timelines of their own, with their replies policy; nobody else can read or change them.
@Suite("Lists")
struct UserListTests {
    @Test("a list's timeline shows its members' tweets and the replies its policy keeps; only its owner reaches it")
    func listTimeline() async throws {
        let edge = try await GatewayStack.shared()
        let (ana, ben, cat, dan) = (
            try await edge.register("ana"), try await edge.register("ben"), try await edge.register("cat"), try await edge.register("dan")
        )
        func answer(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser) async throws -> JSONValue {
            try await EdgeHTTP.rpc(edge.url, method, params, token: user.token)
        }
        func call(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser) async throws -> JSONValue {
            let reply = try await answer(method, params, as: user)
            return try #require(reply["result"], "\(method) answered \(reply)")
        }
        func post(_ text: String, replyTo: String? = nil, as user: EdgeUser) async throws -> String {
            var params: [String: JSONValue] = ["text": .string(text)]
            params["replyTo"] = replyTo.map { .string($0) }
            return try #require(try await call("tweets.create", params, as: user)["id"]?.stringValue)
        }
        func ids(_ page: JSONValue) -> [String] { page["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [] }
        for user in [ben, cat, dan] { _ = try await call("graph.follow", ["userId": .string(user.id)], as: ana) }

        let list = try await call("graph.createList", ["title": "  Friends  "], as: ana)
        let listId = try #require(list["id"]?.stringValue)
        #expect(list["title"] == "Friends" && list["repliesPolicy"] == "followed" && list["members"] == 0)
        let added = try await call("graph.addToList", ["listId": .string(listId), "userIds": [.string(ben.id), .string(cat.id)]], as: ana)
        #expect(added["members"] == 2)
        #expect(try await ids(call("graph.listMembers", ["listId": .string(listId)], as: ana)).sorted() == [ben.id, cat.id].sorted())
        #expect(try await call("graph.listsWith", ["userId": .string(ben.id)], as: ana).arrayValue?.map { $0["id"] } == [.string(listId)])
        #expect(try await call("graph.lists", as: ana).arrayValue?.map { $0["title"] } == ["Friends"])

        // Members' tweets, not dan's; ben's reply to dan (whom ana follows) and cat's thread show
        // under `followed`; under `list`, the reply to dan does not; under `none`, no reply does.
        let bens = try await post("ben on the list", as: ben)
        let dans = try await post("dan, followed but not listed", as: dan)
        let toDan = try await post("@\(dan.username) ben answers dan", replyTo: dans, as: ben)
        let thread = try await post("cat's thread, 2/2", replyTo: try await post("cat's thread, 1/2", as: cat), as: cat)
        func timeline() async throws -> [String] { ids(try await call("timeline.list", ["listId": .string(listId), "limit": 100], as: ana)) }
        #expect(await eventually { (try? await Set(timeline()).isSuperset(of: [bens, toDan, thread])) == true })
        #expect(try await !timeline().contains(dans))
        _ = try await call("graph.updateList", ["listId": .string(listId), "repliesPolicy": "list"], as: ana)
        let underList = try await timeline()
        #expect(underList.contains(thread) && !underList.contains(toDan))
        let renamed = try await call("graph.updateList", ["listId": .string(listId), "title": "Close", "repliesPolicy": "none"], as: ana)
        #expect(renamed["title"] == "Close" && renamed["repliesPolicy"] == "none")
        let underNone = try await timeline()
        #expect(Set(underNone).isDisjoint(with: [toDan, thread]) && underNone.contains(bens))
        // Pages follow the cursor.
        let first = try await call("timeline.list", ["listId": .string(listId), "limit": 1], as: ana)
        let cursor = try #require(first["nextCursor"]?.stringValue)
        let second = try await call("timeline.list", ["listId": .string(listId), "limit": 100, "cursor": .string(cursor)], as: ana)
        #expect(Set(ids(first)).isDisjoint(with: ids(second)) && !ids(second).isEmpty)

        // Only users ana follows; unfollowing takes ben off the list.
        let stranger = try await answer("graph.addToList", ["listId": .string(listId), "userIds": [.string(ana.id)]], as: ana)
        #expect(stranger["error"]?["data"]?["field"] == "userIds", "\(stranger)")
        _ = try await call("graph.unfollow", ["userId": .string(ben.id)], as: ana)
        #expect(try await ids(call("graph.listMembers", ["listId": .string(listId)], as: ana)) == [cat.id])
        #expect(try await call("graph.list", ["listId": .string(listId)], as: ana)["members"] == 1)
        #expect(try await !timeline().contains(bens))

        // Nobody else reaches it: not_found, as for a list that does not exist.
        for (method, params) in [
            ("graph.list", ["listId": JSONValue.string(listId)]), ("graph.updateList", ["listId": .string(listId), "title": "mine"]),
            ("graph.addToList", ["listId": .string(listId), "userIds": [.string(ana.id)]]),
            ("graph.removeFromList", ["listId": .string(listId), "userIds": [.string(cat.id)]]),
            ("graph.listMembers", ["listId": .string(listId)]), ("timeline.list", ["listId": .string(listId)]),
        ] {
            let refused = try await answer(method, params, as: ben)
            #expect(refused["error"]?["code"]?.intValue == -32004, "\(method): \(refused)")
        }
        #expect(try await call("graph.deleteList", ["listId": .string(listId)], as: ben)["deleted"] == false)
        #expect(try await call("graph.lists", as: ben).arrayValue == [])
        let anonymous = try await EdgeHTTP.rpc(edge.url, "timeline.list", ["listId": .string(listId)])
        #expect(anonymous["error"]?["code"]?.intValue == -32001)
        // The internal read is not served at the edge, even with a forged service credential.
        let forged = try await answer(
            "graph.listFeed",
            ["listId": .string(listId), "userId": .string(ana.id), "_meta": ["service": .string(edge.stack.serviceCredential)]], as: ben)
        #expect(forged["error"]?["code"]?.intValue == -32601)

        #expect(try await call("graph.deleteList", ["listId": .string(listId)], as: ana)["deleted"] == true)
        #expect(try await call("graph.deleteList", ["listId": .string(listId)], as: ana)["deleted"] == false)
        #expect(try await answer("timeline.list", ["listId": .string(listId)], as: ana)["error"]?["code"]?.intValue == -32004)
    }

    @Test("bad titles, policies and member counts are refused naming the field; a user has at most 100 lists")
    func limits() async throws {
        let edge = try await GatewayStack.shared()
        let eve = try await edge.register("eve")
        func field(_ method: String, _ params: [String: JSONValue]) async throws -> String? {
            try await EdgeHTTP.rpc(edge.url, method, params, token: eve.token)["error"]?["data"]?["field"]?.stringValue
        }
        #expect(try await field("graph.createList", ["title": "   "]) == "title")
        #expect(try await field("graph.createList", ["title": .string(String(repeating: "x", count: 101))]) == "title")
        #expect(try await field("graph.createList", ["title": "ok", "repliesPolicy": "everyone"]) == "repliesPolicy")
        let list = try #require(try await EdgeHTTP.rpc(edge.url, "graph.createList", ["title": "one"], token: eve.token)["result"]?["id"])
        #expect(try await field("graph.addToList", ["listId": list, "userIds": []]) == "userIds")
        #expect(try await field("graph.addToList", ["listId": list, "userIds": .array(Array(repeating: list, count: 101))]) == "userIds")
        #expect(try await field("graph.listMembers", ["listId": list, "cursor": "nonsense"]) == "cursor")
        for index in 2...100 {
            let made = try await EdgeHTTP.rpc(edge.url, "graph.createList", ["title": .string("list \(index)")], token: eve.token)
            #expect(made["result"] != nil, "\(made)")
        }
        #expect(try await field("graph.createList", ["title": "one too many"]) == "title")
        #expect(try await EdgeHTTP.rpc(edge.url, "graph.lists", [:], token: eve.token)["result"]?.arrayValue?.count == 100)
    }
}
