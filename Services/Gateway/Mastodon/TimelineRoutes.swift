import AviaryAPI
import Hummingbird

/// `/api/v1/timelines/...`: the home timeline (timeline) and a hashtag's (tweets' search); the
/// caller's favourites (tweets' likedBy).
extension MastodonAPI {
    func addTimelineRoutes(to router: Router<EdgeContext>) {
        endpoint(router, .get, "api/v1/timelines/home", access: .user, scope: "read:statuses") { call, _ in
            try await statusPage(call) { cursor, limit in
                try await self.call(TimelineAPI.home, PageParams(limit: limit, cursor: cursor), call)
            }
        }
        endpoint(router, .get, "api/v1/favourites", access: .user, scope: "read:favourites") { call, _ in
            // In the order they were liked, with the service's cursor.
            try await cursorPage(call, limits: (20, MastodonPaging.maximum), render: { call.renderer.status($0) }) { cursor, limit in
                try await self.call(TweetsAPI.likedBy, UserPageParams(userId: EntityID(call.userID), limit: limit, cursor: cursor), call)
            }
        }
        endpoint(router, .get, "api/v1/timelines/tag/:hashtag", access: .everyone, scope: "read:statuses") { call, context in
            let tag = context.parameters.get("hashtag") ?? ""
            guard (1...100).contains(tag.count), tag.unicodeScalars.allSatisfy(TextRules.isNameScalar) else {
                throw MastodonError.notFound
            }
            return try await statusPage(call) { cursor, limit in
                try await self.call(TweetsAPI.search, SearchParams(query: "#" + tag, limit: limit, cursor: cursor), call)
            }
        }
    }
}
