import AviaryAPI
import AviaryJSON
import Hummingbird
import RPC

/// `/api/v1/notifications`: the caller's notifications (the notifications service). Aviary's
/// kinds read as Mastodon's: a like is a `favourite`, a repost a `reblog`, a quote a `quote`, a
/// reply or a mention a `mention`, a follow a `follow`. Notifications of direct messages stay in Aviary's messaging and are not listed.
extension MastodonAPI {
    func addNotificationRoutes(to router: Router<EdgeContext>) {
        endpoint(router, .get, "api/v1/notifications", access: .user, scope: "read:notifications") { call, _ in
            let kinds = try Self.kinds(call.params)
            guard !kinds.isEmpty else { return EdgeResponses.json([]) }
            let items = try await MastodonPaging(call.params).items(id: \.id.value) { cursor, limit in
                try await self.call(NotificationsAPI.list, NotificationListParams(limit: limit, cursor: cursor, types: kinds), call)
            }
            let link = MastodonPaging.link(
                call.request, origin: call.renderer.origin, next: items.last?.id.description, prev: items.first?.id.description)
            return EdgeResponses.json(RawJSON.array(try items.map(call.renderer.notification)), headers: link)
        }
        endpoint(router, .get, "api/v2/notifications", access: .user, scope: "read:notifications") { call, _ in
            let kinds = try Self.kinds(call.params)
            guard !kinds.isEmpty else { return EdgeResponses.json(["accounts": [], "statuses": [], "notification_groups": []]) }
            let items = try await MastodonPaging(call.params).items(id: \.id.value) { cursor, limit in
                try await self.call(
                    NotificationsAPI.list, NotificationListParams(limit: limit, cursor: cursor, types: kinds, grouped: true), call)
            }
            let link = MastodonPaging.link(
                call.request, origin: call.renderer.origin, next: items.last?.id.description, prev: items.first?.id.description)
            return EdgeResponses.json(try Self.grouped(items, call.renderer), headers: link)
        }
        endpoint(router, .get, "api/v1/notifications/unread_count", access: .user, scope: "read:notifications") { call, _ in
            let unread = try await self.call(NotificationsAPI.unreadCount, Empty(), call)
            return EdgeResponses.json(["count": .int(unread.count)])
        }
        endpoint(router, .post, "api/v1/notifications/clear", access: .user, scope: "write:notifications") { call, _ in
            _ = try await self.call(NotificationsAPI.clear, Empty(), call)
            return EdgeResponses.json([:])
        }
        endpoint(router, .post, "api/v1/notifications/:id/dismiss", access: .user, scope: "write:notifications") { call, context in
            _ = try await self.call(NotificationsAPI.dismiss, NotificationParams(notificationId: try call.pathID(context)), call)
            return EdgeResponses.json([:])
        }
        endpoint(router, .get, "api/v1/notifications/:id", access: .user, scope: "read:notifications") { call, context in
            let id = try call.pathID(context)
            // The list is newest first after a cursor: the one after id + 1 is id itself, if it is the caller's.
            let page = try await self.call(
                NotificationsAPI.list,
                NotificationListParams(limit: PageLimit(1), cursor: KeysetCursor.encodeID(id.value + 1), types: Self.listedKinds), call)
            guard let item = page.items.first, item.id == id else { throw MastodonError.notFound }
            return EdgeResponses.json(try call.renderer.notification(item))
        }
    }

    /// The kinds Aviary lists as Mastodon notifications.
    static let listedKinds: [NotificationKind] = [.follow, .like, .repost, .quote, .reply, .mention]

    /// The Aviary kinds a list asks for: `types[]` (all by default) less `exclude_types[]`.
    static func kinds(_ params: MastodonParams) throws(MastodonError) -> [NotificationKind] {
        func aviary(_ names: [String], field: String) throws(MastodonError) -> Set<NotificationKind> {
            var kinds: Set<NotificationKind> = []
            for name in names {
                switch name {
                case "favourite": kinds.insert(.like)
                case "follow": kinds.insert(.follow)
                case "reblog": kinds.insert(.repost)
                case "quote": kinds.insert(.quote)
                case "mention": kinds.formUnion([.mention, .reply])
                case "status", "follow_request", "poll", "update", "admin.sign_up", "admin.report", "severed_relationships",
                    "moderation_warning", "quoted_update":
                    continue
                default: throw MastodonError.validation(field, "holds an unknown notification type")
                }
            }
            return kinds
        }
        let types = params.list("types")
        let wanted = types.isEmpty ? Set(listedKinds) : try aviary(types, field: "types")
        let excluded = try aviary(params.list("exclude_types"), field: "exclude_types")
        return listedKinds.filter { wanted.contains($0) && !excluded.contains($0) }
    }

    /// Grouped notifications (`/api/v2/notifications`): Aviary groups likes and reposts of one status and
    /// follows of one window (`AVIARY_NOTIFICATIONS_GROUP_WINDOW_SECONDS`); each group names its
    /// newest notification and up to three of its accounts, whose entities come once beside the
    /// groups, as do the statuses'.
    static func grouped(_ items: [NotificationItem], _ renderer: MastodonRenderer) throws -> RawJSON {
        var accounts: [EntityID: UserSummary] = [:]
        var statuses: [EntityID: Tweet] = [:]
        var groups = JSONWriter()
        try groups.array(items) { groups, item in
            let type = MastodonRenderer.type(of: item.type)
            let actors = item.actors ?? [item.actor]
            for actor in actors { accounts[actor.id] = actor }
            let tweet = try item.decodedTweet()
            if let tweet { statuses[tweet.id] = tweet }
            let id = item.id.description
            groups.object { group in
                group.member("group_key", (item.count ?? 1) > 1 ? "\(type)-\(tweet?.id.description ?? id)" : "ungrouped-\(id)")
                group.member("notifications_count", item.count ?? 1)
                group.member("type", type)
                group.member("most_recent_notification_id", id)
                group.member("page_min_id", id)
                group.member("page_max_id", id)
                group.member("latest_page_notification_at", RFC3339.format(item.createdAt))
                group.member("sample_account_ids", array: actors) { list, actor in list.string(actor.id.description) }
                group.member("status_id", tweet?.id.description)
            }
        }
        return RawJSON.object { page in
            page.member("accounts", array: accounts.values) { list, actor in renderer.writeAccount(actor, to: &list) }
            page.member("statuses", array: statuses.values) { list, tweet in renderer.writeStatus(tweet, to: &list) }
            page.member("notification_groups", raw: groups.json)
        }
    }
}
