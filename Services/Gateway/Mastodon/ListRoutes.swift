import AviaryAPI
import AviaryJSON
import Hummingbird
import RPC

/// `/api/v1/lists`: the caller's lists (social-graph's `graph.createList` … `graph.listMembers`),
/// their timelines (`timeline.list`), and `GET /api/v1/accounts/:id/lists`. Mastodon's exclusive
/// lists (whose members leave the home timeline) are not served: `exclusive` is always false, and
/// asking for true is a 422.
extension MastodonAPI {
    func addListRoutes(to router: Router<EdgeContext>) {
        endpoint(router, .get, "api/v1/lists", access: .user, scope: "read:lists") { call, _ in
            EdgeResponses.json(.array(try await self.call(GraphAPI.lists, Empty(), call).map(Self.rendered)))
        }
        endpoint(router, .post, "api/v1/lists", access: .user, scope: "write:lists") { call, _ in
            let (title, policy) = try Self.listFields(call)
            guard let title else { throw MastodonError.validation("title", "can't be blank") }
            return EdgeResponses.json(Self.rendered(try await self.call(GraphAPI.createList, NewListParams(title: title, repliesPolicy: policy), call)))
        }
        endpoint(router, .get, "api/v1/lists/:id", access: .user, scope: "read:lists") { call, context in
            EdgeResponses.json(Self.rendered(try await self.call(GraphAPI.list, ListParams(listId: try call.pathID(context)), call)))
        }
        endpoint(router, .put, "api/v1/lists/:id", access: .user, scope: "write:lists") { call, context in
            let id = try call.pathID(context)
            let (title, policy) = try Self.listFields(call)
            let list = try await self.call(GraphAPI.updateList, ListUpdateParams(listId: id, title: title, repliesPolicy: policy), call)
            return EdgeResponses.json(Self.rendered(list))
        }
        endpoint(router, .delete, "api/v1/lists/:id", access: .user, scope: "write:lists") { call, context in
            guard try await self.call(GraphAPI.deleteList, ListParams(listId: try call.pathID(context)), call).deleted else {
                throw MastodonError.notFound
            }
            return EdgeResponses.json([:])
        }
        endpoint(router, .get, "api/v1/lists/:id/accounts", access: .user, scope: "read:lists") { call, context in
            let id = try call.pathID(context)
            // limit=0 asks for every member, as Mastodon allows.
            if call.params["limit"] == "0" {
                var members: [User] = []
                var cursor: String?
                repeat {
                    let page = try await self.call(GraphAPI.listMembers, ListPageParams(listId: id, limit: PageLimit(PageLimit.maximum), cursor: cursor), call)
                    members += page.items
                    cursor = page.nextCursor
                } while cursor != nil
                return EdgeResponses.json(RawJSON.array(members.map { call.renderer.account($0) }))
            }
            return try await cursorPage(call, render: { call.renderer.account($0) }) { cursor, limit in
                try await self.call(GraphAPI.listMembers, ListPageParams(listId: id, limit: limit, cursor: cursor), call)
            }
        }
        for (method, change) in [(HTTPRequest.Method.post, GraphAPI.addToList), (.delete, GraphAPI.removeFromList)] {
            endpoint(router, method, "api/v1/lists/:id/accounts", access: .user, scope: "write:lists") { call, context in
                let id = try call.pathID(context)
                let accounts = try call.params.list("account_ids").map { text throws(MastodonError) -> EntityID in
                    guard let account = MastodonParams.id(text) else { throw .validation("account_ids", "is not an id") }
                    return EntityID(account)
                }
                guard !accounts.isEmpty else { throw MastodonError.validation("account_ids", "can't be blank") }
                _ = try await self.call(change, ListMembersParams(listId: id, userIds: accounts), call)
                return EdgeResponses.json([:])
            }
        }
        endpoint(router, .get, "api/v1/accounts/:id/lists", access: .user, scope: "read:lists") { call, context in
            let lists = try await self.call(GraphAPI.listsWith, UserParams(userId: try call.pathID(context)), call)
            return EdgeResponses.json(.array(lists.map(Self.rendered)))
        }
        endpoint(router, .get, "api/v1/timelines/list/:id", access: .user, scope: "read:lists") { call, context in
            let id = try call.pathID(context)
            return try await statusPage(call) { cursor, limit in
                try await self.statuses(TimelineAPI.list, ListPageParams(listId: id, limit: limit, cursor: cursor), call)
            }
        }
    }

    /// A list as Mastodon's List entity.
    static func rendered(_ list: UserList) -> JSONValue {
        [
            "id": .string(list.id.description), "title": .string(list.title), "replies_policy": .string(list.repliesPolicy.rawValue),
            "exclusive": false,
        ]
    }

    /// The `title` and `replies_policy` of a list's create or update, each nil when not given.
    private static func listFields(_ call: Call) throws(MastodonError) -> (title: String?, policy: ListRepliesPolicy?) {
        if call.params.flag("exclusive") == true {
            throw .validation("exclusive", "is not supported: members of a list stay on the home timeline")
        }
        let policy = try call.params["replies_policy"].map { text throws(MastodonError) -> ListRepliesPolicy in
            guard let policy = ListRepliesPolicy(rawValue: text) else { throw .validation("replies_policy", "must be followed, list or none") }
            return policy
        }
        return (call.params["title"], policy)
    }
}
