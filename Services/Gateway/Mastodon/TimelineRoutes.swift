import AviaryAPI
import AviaryJSON
import Hummingbird

/// `/api/v1/timelines/...`: the home timeline (timeline), the public one (tweets' latest) and a
/// hashtag's (tweets' byHashtag); the caller's favourites (tweets' likedBy) and bookmarks; trending
/// hashtags (tweets' trending).
extension MastodonAPI {
    func addTimelineRoutes(to router: Router<EdgeContext>) {
        endpoint(router, .get, "api/v1/timelines/home", access: .user, scope: "read:statuses") { call, _ in
            try await statusPage(call) { cursor, limit in
                try await self.statuses(TimelineAPI.home, PageParams(limit: limit, cursor: cursor), call)
            }
        }
        endpoint(router, .get, "api/v1/timelines/public", access: .everyone, scope: "read:statuses") { call, _ in
            // One instance, no federation: every status is local, and none is remote.
            if call.params.flag("remote") == true, call.params.flag("local") != true { return EdgeResponses.json([]) }
            let mediaOnly = call.params.flag("only_media") ?? false
            return try await statusPage(call) { cursor, limit in
                try await self.statuses(TweetsAPI.latest, LatestParams(limit: limit, cursor: cursor, mediaOnly: mediaOnly), call)
            }
        }
        endpoint(router, .get, "api/v1/favourites", access: .user, scope: "read:favourites") { call, _ in
            // In the order they were liked, with the service's cursor.
            try await cursorPage(call, limits: (20, MastodonPaging.maximum), render: { call.renderer.status($0) }) { cursor, limit in
                try await self.call(TweetsAPI.likedBy, UserPageParams(userId: EntityID(call.userID), limit: limit, cursor: cursor), call)
            }
        }
        endpoint(router, .get, "api/v1/bookmarks", access: .user, scope: "read:bookmarks") { call, _ in
            try await cursorPage(call, limits: (20, MastodonPaging.maximum), render: { call.renderer.status($0, bookmarked: true) }) {
                cursor, limit in
                try await self.call(TweetsAPI.bookmarks, PageParams(limit: limit, cursor: cursor), call)
            }
        }
        endpoint(router, .get, "api/v1/timelines/tag/:hashtag", access: .everyone, scope: "read:statuses") { call, context in
            let tag = context.parameters.get("hashtag") ?? ""
            guard (1...100).contains(tag.count), tag.unicodeScalars.allSatisfy(TextRules.isNameScalar) else {
                throw MastodonError.notFound
            }
            return try await statusPage(call) { cursor, limit in
                try await self.statuses(TweetsAPI.byHashtag, HashtagPageParams(hashtag: tag, limit: limit, cursor: cursor), call)
            }
        }
        endpoint(router, .get, "api/v1/trends/tags", access: .everyone, scope: "read") { call, _ in
            // Uses are counted over the last hour, not per day.
            let limit = try call.params.integer("limit", in: 1...20) ?? 10
            let top = try await self.call(TweetsAPI.trending, TrendingParams(limit: PageLimit(limit)), call)
            return EdgeResponses.json(RawJSON.array(top.map { call.renderer.tag($0.hashtag, uses: $0.uses) }))
        }
    }
}
