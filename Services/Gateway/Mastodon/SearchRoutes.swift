import AviaryAPI
import AviaryJSON
import Hummingbird
import RPC

/// `GET /api/v2/search` (accounts from auth, statuses from tweets, hashtags as typed) and
/// `GET /api/v2/suggestions` (social-graph's friends of friends).
extension MastodonAPI {
    func addSearchRoutes(to router: Router<EdgeContext>) {
        endpoint(router, .get, "api/v2/search", access: .everyone, scope: "read:search") { call, _ in
            let params = call.params
            guard let query = try params.text("q", atMost: 100)?.trimmingWhitespace(), !query.isEmpty else {
                throw MastodonError.validation("q", "can't be blank")
            }
            let type = params["type"]
            guard type.map({ ["accounts", "statuses", "hashtags"].contains($0) }) ?? true else {
                throw MastodonError.validation("type", "must be accounts, statuses or hashtags")
            }
            let limit = try params.integer("limit", in: 1...40) ?? 20
            // The services page with cursors, not offsets: an offset is read past, up to their largest page.
            let offset = try params.integer("offset", in: 0...(PageLimit.maximum - limit)) ?? 0
            let page = PageLimit(limit + offset)
            var accounts: [RawJSON] = []
            var statuses: [RawJSON] = []
            var hashtags: [RawJSON] = []
            if type == nil || type == "accounts" {
                let users = try await matching { try await self.call(AccountAPI.searchUsers, SearchParams(query: query, limit: page), call) }
                accounts = users.dropFirst(offset).map { call.renderer.account($0) }
            }
            if type == nil || type == "statuses" {
                let tweets = try await matching { try await self.call(TweetsAPI.search, SearchParams(query: query, limit: page), call) }
                statuses = tweets.dropFirst(offset).map { call.renderer.status($0) }
            }
            let tag = query.hasPrefix("#") ? String(query.dropFirst()) : query
            if type == nil || type == "hashtags", offset == 0, (1...100).contains(tag.count), tag.unicodeScalars.allSatisfy(TextRules.isNameScalar) {
                hashtags = [call.renderer.tag(tag.lowercased())]
            }
            return EdgeResponses.json(
                RawJSON.object { results in
                    results.member("accounts", raw: .array(accounts))
                    results.member("statuses", raw: .array(statuses))
                    results.member("hashtags", raw: .array(hashtags))
                })
        }
        endpoint(router, .get, "api/v2/suggestions", access: .user, scope: "read") { call, _ in
            let limit = try call.params.integer("limit", in: 1...Self.accountPageMaximum) ?? 40
            let users = try await self.call(GraphAPI.suggestions, SuggestionParams(limit: PageLimit(min(limit, PageLimit.maximum))), call)
            return EdgeResponses.json(
                RawJSON { writer in
                    writer.array(users) { list, user in
                        list.object { suggestion in
                            suggestion.member("source", "global")
                            suggestion.member("sources", ["friends_of_friends"] as JSONValue)
                            suggestion.key("account")
                            call.renderer.writeAccount(user, to: &suggestion)
                        }
                    }
                })
        }
    }

    /// A search's items; a query the service cannot search by (nothing but punctuation, say)
    /// finds nothing rather than failing the other kinds.
    private func matching<Item>(_ search: () async throws -> Page<Item>) async throws -> [Item] {
        do {
            return try await search().items
        } catch let error as RPCError where error.reason == "validation" {
            return []
        }
    }
}
