import AviaryAPI
import AviaryJSON
import Hummingbird
import RPC

/// `/api/v1/notifications`: the caller's notifications (the notifications service). Aviary's
/// kinds read as Mastodon's: a like is a `favourite`, a reply or a mention a `mention`, a follow a
/// `follow`. Notifications of direct messages stay in Aviary's messaging and are not listed.
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
            return EdgeResponses.json(.array(try items.map(call.renderer.notification)), headers: link)
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
    static let listedKinds: [NotificationKind] = [.follow, .like, .reply, .mention]

    /// The Aviary kinds a list asks for: `types[]` (all by default) less `exclude_types[]`.
    static func kinds(_ params: MastodonParams) throws(MastodonError) -> [NotificationKind] {
        func aviary(_ names: [String], field: String) throws(MastodonError) -> Set<NotificationKind> {
            var kinds: Set<NotificationKind> = []
            for name in names {
                switch name {
                case "favourite": kinds.insert(.like)
                case "follow": kinds.insert(.follow)
                case "mention": kinds.formUnion([.mention, .reply])
                case "status", "reblog", "follow_request", "poll", "update", "admin.sign_up", "admin.report", "severed_relationships",
                    "moderation_warning", "quote", "quoted_update":
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
}
