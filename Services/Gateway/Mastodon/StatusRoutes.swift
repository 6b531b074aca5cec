import AviaryAPI
import AviaryJSON
import HTTPTypes
import Hummingbird
import RPC

/// `/api/v1/statuses/...`: posting, reading, deleting and favouriting tweets, and a status's
/// thread.
extension MastodonAPI {
    /// The most ancestors and descendants a context shows.
    static let contextLimit = 60

    func addStatusRoutes(to router: Router<EdgeContext>) {
        endpoint(router, .post, "api/v1/statuses", access: .user, scope: "write:statuses") { call, _ in
            let params = call.params
            if let visibility = params["visibility"], !["public", "unlisted"].contains(visibility) {
                throw visibility == "direct"
                    ? MastodonError.unsupported("Direct visibility (Aviary's direct messages are its messaging service)")
                    : MastodonError.unsupported("Visibility \(visibility.prefix(20))")
            }
            if !params.list("poll[options]").isEmpty { throw MastodonError.unsupported("A poll") }
            if params["scheduled_at"] != nil { throw MastodonError.unsupported("Scheduling") }
            if params["spoiler_text"] != nil { throw MastodonError.unsupported("A content warning (spoiler_text)") }
            guard let text = params["status"] else { throw MastodonError.validation("status", "can't be blank") }
            let media = try params.list("media_ids").map { text throws(MastodonError) in
                guard let id = MastodonParams.id(text) else { throw MastodonError.validation("media_ids", "holds a value that is not an id") }
                return EntityID(id)
            }
            let idempotency = call.request.headers[Self.idempotencyKey]
            if let idempotency, idempotency.count > 100 {
                throw MastodonError.validation("Idempotency-Key", "is too long (maximum is 100 characters)")
            }
            let create = CreateTweetParams(
                text: text, replyTo: try params.id("in_reply_to_id").map(EntityID.init), mediaIds: media.isEmpty ? nil : media,
                quoteOf: try params.id("quoted_status_id").map(EntityID.init), idempotencyKey: idempotency)
            return EdgeResponses.json(call.renderer.status(try await self.call(TweetsAPI.create, create, call)))
        }
        endpoint(router, .get, "api/v1/statuses/:id", access: .everyone, scope: "read:statuses") { call, context in
            EdgeResponses.json(call.renderer.status(try await liveStatus(try call.pathID(context), call)))
        }
        endpoint(router, .delete, "api/v1/statuses/:id", access: .user, scope: "write:statuses") { call, context in
            let tweet = try await liveStatus(try call.pathID(context), call)
            _ = try await self.call(TweetsAPI.delete, TweetParams(tweetId: tweet.id), call)
            return EdgeResponses.json(call.renderer.status(tweet, source: true))
        }
        endpoint(router, .get, "api/v1/statuses/:id/context", access: .everyone, scope: "read:statuses") { call, context in
            let tweet = try await liveStatus(try call.pathID(context), call)
            var ancestors: [Tweet] = []
            var parent = tweet.replyTo
            while let id = parent, ancestors.count < Self.contextLimit {
                guard let above = try? await self.call(TweetsAPI.get, TweetParams(tweetId: id), call) else { break }
                if !above.deleted { ancestors.insert(above, at: 0) }
                parent = above.replyTo
            }
            var descendants: [Tweet] = []
            var waiting = [tweet.id]
            while !waiting.isEmpty, descendants.count < Self.contextLimit {
                let id = waiting.removeFirst()
                let replies = try await self.call(TweetsAPI.replies, RepliesParams(tweetId: id, limit: PageLimit(PageLimit.maximum)), call)
                descendants += replies.items.prefix(Self.contextLimit - descendants.count)
                waiting += replies.items.map(\.id)
            }
            return EdgeResponses.json(
                RawJSON.object { context in
                    context.member("ancestors", raw: call.renderer.statuses(ancestors))
                    context.member("descendants", raw: call.renderer.statuses(descendants))
                })
        }
        endpoint(router, .get, "api/v1/statuses/:id/favourited_by", access: .everyone, scope: "read:accounts") { call, context in
            let id = try call.pathID(context)
            return try await cursorPage(call, render: { call.renderer.account($0) }) { cursor, limit in
                try await self.call(TweetsAPI.likers, RepliesParams(tweetId: id, limit: limit, cursor: cursor), call)
            }
        }
        endpoint(router, .get, "api/v1/statuses/:id/reblogged_by", access: .everyone, scope: "read:accounts") { call, context in
            let id = try call.pathID(context)
            return try await cursorPage(call, render: { call.renderer.account($0) }) { cursor, limit in
                try await self.call(TweetsAPI.reposters, RepliesParams(tweetId: id, limit: limit, cursor: cursor), call)
            }
        }
        endpoint(router, .post, "api/v1/statuses/:id/reblog", access: .user, scope: "write:statuses") { call, context in
            let id = try call.pathID(context)
            let state = try await self.call(TweetsAPI.repost, TweetParams(tweetId: id), call)
            // Mastodon answers the reblog: the caller's repost, with the original inside. Its counts
            // are the call's: another tweets instance may not have heard of it yet, as with likes.
            var entry = try await liveStatus(state.repostId ?? id, call)
            (entry.reposts, entry.repostedByMe) = (state.reposts, state.repostedByMe)
            return EdgeResponses.json(call.renderer.status(entry))
        }
        endpoint(router, .post, "api/v1/statuses/:id/unreblog", access: .user, scope: "write:statuses") { call, context in
            let id = try call.pathID(context)
            let state = try await self.call(TweetsAPI.unrepost, TweetParams(tweetId: id), call)
            var original = try await liveStatus(id, call)
            (original.repostedBy, original.repostId) = (nil, nil)
            (original.reposts, original.repostedByMe) = (state.reposts, state.repostedByMe)
            return EdgeResponses.json(call.renderer.status(original))
        }
        for (path, method) in [("api/v1/statuses/:id/bookmark", TweetsAPI.bookmark), ("api/v1/statuses/:id/unbookmark", TweetsAPI.unbookmark)] {
            endpoint(router, .post, RouterPath(path), access: .user, scope: "write:bookmarks") { call, context in
                let id = try call.pathID(context)
                let state = try await self.call(method, TweetParams(tweetId: id), call)
                return EdgeResponses.json(call.renderer.status(try await liveStatus(id, call), bookmarked: state.bookmarked))
            }
        }
        endpoint(router, .post, "api/v1/statuses/:id/pin", access: .user, scope: "write:accounts") { call, context in
            let id = try call.pathID(context)
            _ = try await self.call(TweetsAPI.pin, TweetParams(tweetId: id), call)
            return EdgeResponses.json(call.renderer.status(try await liveStatus(id, call), pinned: true))
        }
        endpoint(router, .post, "api/v1/statuses/:id/unpin", access: .user, scope: "write:accounts") { call, context in
            let id = try call.pathID(context)
            // Aviary pins one tweet a profile: unpinning this one unpins the profile's only if it is this one.
            let pinned = try await self.call(TweetsAPI.pinned, UserParams(userId: EntityID(call.userID)), call)
            if pinned.tweet?.id == id { _ = try await self.call(TweetsAPI.unpin, Empty(), call) }
            return EdgeResponses.json(call.renderer.status(try await liveStatus(id, call), pinned: false))
        }
        for (path, method) in [("api/v1/statuses/:id/favourite", TweetsAPI.like), ("api/v1/statuses/:id/unfavourite", TweetsAPI.unlike)] {
            endpoint(router, .post, RouterPath(path), access: .user, scope: "write:favourites") { call, context in
                let id = try call.pathID(context)
                let state = try await self.call(method, TweetParams(tweetId: id), call)
                var tweet = try await liveStatus(id, call)
                (tweet.likes, tweet.likedByMe) = (state.likes, state.likedByMe)
                return EdgeResponses.json(call.renderer.status(tweet))
            }
        }
    }

    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!

    /// The tweet `id`; a deleted one is not found, as Mastodon has no tombstones to show.
    private func liveStatus(_ id: EntityID, _ call: Call) async throws -> Tweet {
        let tweet = try await self.call(TweetsAPI.get, TweetParams(tweetId: id), call)
        guard !tweet.deleted else { throw MastodonError.notFound }
        return tweet
    }

    /// A page of statuses, newest first, with its `Link` header, read through `fetch`.
    func statusPage(
        _ call: Call, _ fetch: (_ cursor: String?, _ limit: PageLimit) async throws -> Page<StatusCache.Status>
    ) async throws -> Response {
        let statuses = try await MastodonPaging(call.params).items(id: \.tweet.entryId.value, fetch)
        let link = MastodonPaging.link(
            call.request, origin: call.renderer.origin, next: statuses.last?.tweet.entryId.description,
            prev: statuses.first?.tweet.entryId.description)
        return EdgeResponses.json(RawJSON.array(statuses.map(\.json)), headers: link)
    }

    /// A page of `method`'s tweets as statuses rendered for `call`, through ``StatusCache``.
    func statuses<Params>(_ method: RPCMethod<Params, Page<Tweet>>, _ params: Params, _ call: Call) async throws -> Page<StatusCache.Status> {
        try statusCache.statuses(try await gateway.forwarder.raw(method, params, for: call.caller), renderer: call.renderer)
    }
}
