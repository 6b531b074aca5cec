import AviaryAPI
import AviaryJSON
import Foundation
import Hummingbird
import RPC
import ServiceKit

/// `/api/v1/accounts/...`: profiles (auth), follows and relationships (social-graph), and an
/// account's statuses (tweets).
extension MastodonAPI {
    /// Mastodon's most accounts per page.
    static let accountPageMaximum = 80

    func addAccountRoutes(to router: Router<EdgeContext>) {
        endpoint(router, .post, "api/v1/accounts", access: .everyone, scope: "write:accounts") { call, _ in
            // An app registers its user with its own token (client_credentials), as Mastodon asks;
            // the user's token holds that token's scopes.
            guard let app = call.grant else { throw MastodonError.invalidToken }
            guard gateway.settings.mastodonRegistrations else {
                throw MastodonError(status: .forbidden, message: "Registrations are not open on this server")
            }
            let params = call.params
            guard params.flag("agreement") == true else { throw MastodonError.validation("agreement", "must be accepted") }
            var fields: [String: String] = [:]
            for name in ["username", "email", "password"] {
                guard let value = try params.text(name, atMost: 254) else { throw MastodonError.validation(name, "can't be blank") }
                fields[name] = value
            }
            let registered = try await self.call(
                SessionAPI.register,
                RegisterParams(email: fields["email"]!, password: fields["password"]!, username: fields["username"]!, fullname: fields["username"]!),
                call)
            let scopes = app.scopes
            let issued = try await tokens.issue(appID: app.appID, scopes: scopes, session: AviarySession(registered))
            return Self.tokenJSON(issued.token, refresh: issued.refresh, scopes: scopes)
        }
        endpoint(router, .get, "api/v1/accounts/verify_credentials", access: .user, scope: "read:accounts") { call, _ in
            EdgeResponses.json(call.renderer.account(try await self.call(AccountAPI.me, Empty(), call), source: true))
        }
        endpoint(router, .patch, "api/v1/accounts/update_credentials", access: .user, scope: "write:accounts") { call, _ in
            // Off the connection's loop: a multipart avatar is written to a file and read back.
            try await withTaskExecutorPreference(globalConcurrentExecutor) { try await updateCredentials(call) }
        }
        endpoint(router, .get, "api/v1/accounts/lookup", access: .everyone, scope: "read:accounts") { call, _ in
            guard let acct = call.params["acct"] else { throw MastodonError.validation("acct", "can't be blank") }
            let username = try Self.localUsername(acct, host: Self.host(call.renderer.origin))
            return EdgeResponses.json(call.renderer.account(try await self.call(AccountAPI.getUser, GetUserParams(username: username), call)))
        }
        endpoint(router, .get, "api/v1/accounts/search", access: .user, scope: "read:accounts") { call, _ in
            guard let query = try call.params.text("q", atMost: 50) else { throw MastodonError.validation("q", "can't be blank") }
            let limit = try call.params.integer("limit", in: 1...Self.accountPageMaximum) ?? 40
            let page = try await self.call(AccountAPI.searchUsers, SearchParams(query: query, limit: PageLimit(limit)), call)
            return EdgeResponses.json(RawJSON.array(page.items.map { call.renderer.account($0) }))
        }
        endpoint(router, .get, "api/v1/accounts/relationships", access: .user, scope: "read:follows") { call, _ in
            let ids = call.params.list("id")
            guard ids.count <= Self.accountPageMaximum else {
                throw MastodonError.validation("id", "may name at most \(Self.accountPageMaximum) accounts")
            }
            let accounts = try ids.map { text throws(MastodonError) in
                guard let id = MastodonParams.id(text) else { throw MastodonError.validation("id", "is not an id") }
                return EntityID(id)
            }
            // Asked at once rather than one after another; answered in the order asked.
            var relationships = [RawJSON?](repeating: nil, count: accounts.count)
            try await withThrowingTaskGroup(of: (Int, RawJSON).self) { group in
                for (index, id) in accounts.enumerated() { group.addTask { (index, try await relationship(id, call)) } }
                for try await (index, relationship) in group { relationships[index] = relationship }
            }
            return EdgeResponses.json(RawJSON.array(relationships.compactMap { $0 }))
        }
        endpoint(router, .get, "api/v1/accounts/:id", access: .everyone, scope: "read:accounts") { call, context in
            let user = try await self.call(AccountAPI.getUser, GetUserParams(userId: try call.pathID(context)), call)
            return EdgeResponses.json(call.renderer.account(user))
        }
        endpoint(router, .get, "api/v1/accounts/:id/statuses", access: .everyone, scope: "read:statuses") { call, context in
            let id = try call.pathID(context)
            // A profile pins one tweet at most; Aviary has no boosts to exclude.
            if call.params.flag("pinned") == true {
                let pinned = try await self.call(TweetsAPI.pinned, UserParams(userId: id), call)
                return EdgeResponses.json(RawJSON.array(pinned.tweet.map { [call.renderer.status($0, pinned: true)] } ?? []))
            }
            let includeReplies = !(call.params.flag("exclude_replies") ?? false)
            let onlyMedia = call.params.flag("only_media") ?? false
            let tagged = try call.params.text("tagged", atMost: 100).map { $0.drop { $0 == "#" }.lowercased() }
            return try await statusPage(call) { cursor, limit in
                var page = try await self.statuses(TweetsAPI.byUser, ByUserParams(userId: id, limit: limit, cursor: cursor, includeReplies: includeReplies), call)
                page.items = page.items.filter { status in
                    (!onlyMedia || !status.tweet.media.isEmpty) && tagged.map { status.tweet.hashtags.contains($0) } ?? true
                }
                return page
            }
        }
        for (path, method) in [("api/v1/accounts/:id/followers", GraphAPI.followers), ("api/v1/accounts/:id/following", GraphAPI.following)] {
            endpoint(router, .get, RouterPath(path), access: .everyone, scope: "read:accounts") { call, context in
                let id = try call.pathID(context)
                return try await cursorPage(call, render: { call.renderer.account($0) }) { cursor, limit in
                    try await self.call(method, UserPageParams(userId: id, limit: limit, cursor: cursor), call)
                }
            }
        }
        for (path, method) in [("api/v1/accounts/:id/follow", GraphAPI.follow), ("api/v1/accounts/:id/unfollow", GraphAPI.unfollow)] {
            endpoint(router, .post, RouterPath(path), access: .user, scope: "write:follows") { call, context in
                let id = try call.pathID(context)
                _ = try await self.call(method, UserParams(userId: id), call)
                return EdgeResponses.json(try await relationship(id, call))
            }
        }
    }

    /// `PATCH /api/v1/accounts/update_credentials`: `display_name` and `note` (a form, JSON, or the
    /// fields of a multipart body), and `avatar` (a multipart file part, uploaded to media as an
    /// avatar). Aviary keeps no header image, fields, or privacy settings.
    private func updateCredentials(_ call: Call) async throws -> Response {
        var params = call.params
        var avatar: MediaUpload.SpooledFile?
        let header = call.request.headers[.contentType] ?? ""
        if MediaUpload.mediaType(header) == "multipart/form-data" {
            switch await MediaUpload.readMultipart(of: call.request, contentType: header, limit: maxImageBytes, filePart: "avatar") {
            case .failure(let refusal): return refusal.response
            case .success(let form):
                avatar = form.file
                for (name, value) in form.fields { params.add(name, value) }
            }
        }
        defer { if let avatar { try? FileManager.default.removeItem(at: avatar.url) } }
        if params["header"] != nil { throw MastodonError.unsupported("A header image") }
        var change = UpdateProfileParams(
            fullname: try params.text("display_name", atMost: TextRules.fullnameLimit), bio: try params.text("note", atMost: TextRules.bioLimit))
        if let avatar {
            let begin = GatewayService.BeginUpload(
                contentType: avatar.contentType, byteSize: avatar.byteSize, purpose: MediaPurpose.avatar.rawValue, conversationId: nil)
            change.profileImage = .set(try await store(begin, from: avatar, call).id)
        }
        return EdgeResponses.json(call.renderer.account(try await self.call(AccountAPI.updateProfile, change, call), source: true))
    }

    /// A page in a service's own order (accounts, liked statuses), with its `Link`: the service's
    /// cursor is opaque, so it travels as `max_id`, which clients copy from `Link` as it is.
    /// `limit` is 40 by default, at most 80 (Mastodon's for accounts), or `limits`.
    func cursorPage<Item>(
        _ call: Call, limits: (default: Int, maximum: Int) = (40, accountPageMaximum), render: (Item) -> RawJSON,
        _ fetch: (_ cursor: String?, _ limit: PageLimit) async throws -> Page<Item>
    ) async throws -> Response {
        let limit = try call.params.integer("limit", in: 1...limits.maximum) ?? limits.default
        let page = try await fetch(try call.params.text("max_id", atMost: 64), PageLimit(min(limit, PageLimit.maximum)))
        let link = MastodonPaging.link(call.request, origin: call.renderer.origin, next: page.nextCursor, prev: nil)
        return EdgeResponses.json(RawJSON.array(page.items.map(render)), headers: link)
    }

    /// The caller's Relationship to `id`, read after whatever the call changed.
    private func relationship(_ id: EntityID, _ call: Call) async throws -> RawJSON {
        if id.value == call.userID { return call.renderer.relationship(id, Relationship(isFollowed: false, followsYou: false)) }
        return call.renderer.relationship(id, try await self.call(GraphAPI.relationship, UserParams(userId: id), call))
    }

    /// Blocks and mutes: `POST /api/v1/accounts/:id/block`, `/unblock`, `/mute` (`notifications`,
    /// default true; `duration` in seconds, 0 for good), `/unmute`, and the caller's lists
    /// `GET /api/v1/blocks` and `/api/v1/mutes` (social-graph's `graph.block` … `graph.mutes`).
    func addSafetyRoutes(to router: Router<EdgeContext>) {
        for (path, method) in [("api/v1/accounts/:id/block", GraphAPI.block), ("api/v1/accounts/:id/unblock", GraphAPI.unblock)] {
            endpoint(router, .post, RouterPath(path), access: .user, scope: "write:blocks") { call, context in
                let id = try call.pathID(context)
                _ = try await self.call(method, UserParams(userId: id), call)
                return EdgeResponses.json(try await relationship(id, call))
            }
        }
        endpoint(router, .post, "api/v1/accounts/:id/mute", access: .user, scope: "write:mutes") { call, context in
            let id = try call.pathID(context)
            let notifications = call.params.flag("notifications") ?? true
            let duration = try call.params.integer("duration", in: 0...MuteParams.durations.upperBound)
            _ = try await self.call(
                GraphAPI.mute, MuteParams(userId: id, notifications: notifications, durationSeconds: duration == 0 ? nil : duration), call)
            return EdgeResponses.json(try await relationship(id, call))
        }
        endpoint(router, .post, "api/v1/accounts/:id/unmute", access: .user, scope: "write:mutes") { call, context in
            let id = try call.pathID(context)
            _ = try await self.call(GraphAPI.unmute, UserParams(userId: id), call)
            return EdgeResponses.json(try await relationship(id, call))
        }
        for (path, method, scope) in [("api/v1/blocks", GraphAPI.blocks, "read:blocks"), ("api/v1/mutes", GraphAPI.mutes, "read:mutes")] {
            endpoint(router, .get, RouterPath(path), access: .user, scope: scope) { call, _ in
                try await cursorPage(call, render: { call.renderer.account($0) }) { cursor, limit in
                    try await self.call(method, PageParams(limit: limit, cursor: cursor), call)
                }
            }
        }
        endpoint(router, .post, "api/v1/reports", access: .user, scope: "write:reports") { call, _ in
            try await report(call)
        }
    }

    /// `POST /api/v1/reports` (`account_id`, `status_ids[]`, `comment`, `category`: spam, legal,
    /// violation or other, the default): auth's `moderation.report`, answered as a Report.
    /// Aviary does not federate: `forward` changes nothing, and there are no instance rules to cite.
    private func report(_ call: Call) async throws -> Response {
        guard let account = try call.params.id("account_id") else { throw MastodonError.validation("account_id", "can't be blank") }
        let statuses = try call.params.list("status_ids").map { text throws(MastodonError) -> EntityID in
            guard let id = MastodonParams.id(text) else { throw .validation("status_ids", "is not an id") }
            return EntityID(id)
        }
        let category = call.params["category"] ?? ReportReason.other.rawValue
        guard let reason = ReportReason(rawValue: category) else {
            throw MastodonError.validation("category", "must be one of \(ReportReason.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let comment = try call.params.text("comment", atMost: ModerationAPI.commentLimit) ?? ""
        let target = EntityID(account)
        let receipt = try await self.call(
            ModerationAPI.report, ReportParams(userId: target, tweetIds: statuses.isEmpty ? nil : statuses, reason: reason, comment: comment),
            call)
        let user = try await self.call(AccountAPI.getUser, GetUserParams(userId: target), call)
        return EdgeResponses.json(
            RawJSON.object { report in
                report.member("id", receipt.reportId.description)
                report.member("action_taken", false)
                report.null("action_taken_at")
                report.member("category", reason.rawValue)
                report.member("comment", comment)
                report.member("forwarded", false)
                report.member("created_at", RFC3339.format(SnowflakeGenerator.timestamp(of: receipt.reportId.value)))
                report.member("status_ids", array: statuses) { list, id in list.string(id.description) }
                report.null("rule_ids")
                report.member("target_account", raw: call.renderer.account(user))
            })
    }

    /// The username of an `acct` (`alice`, `@alice`, or `alice@this.host`); an account on another
    /// server is not found here (Aviary does not federate).
    static func localUsername(_ acct: String, host: String?) throws(MastodonError) -> String {
        let parts = acct.drop { $0 == "@" }.split(separator: "@", maxSplits: 1)
        guard let name = parts.first, name.count <= 30 else { throw MastodonError.notFound }
        if parts.count == 2, parts[1].lowercased() != host?.lowercased() { throw MastodonError.notFound }
        return String(name)
    }
}
