import AviaryAPI
import AviaryJSON
import RPC

extension NotificationsService {
    /// Answers a `Page` of items, written by hand around the tweets (``NotificationItem/page(_:nextCursor:)``).
    @Sendable func list(_ params: NotificationListParams, _ context: RPCContext) async throws -> RawJSON {
        let user = try context.requireUser()
        let before = try KeysetCursor.decodeID(params.cursor)
        let limit = (params.limit ?? PageLimit()).value
        let kinds = params.types.flatMap { $0.isEmpty ? nil : Array(Set($0)) } ?? NotificationKind.allCases
        if params.grouped == true {
            let grouping = NotificationGrouping(store: store, window: groupWindow)
            let page = try await grouping.page(of: user, before: before, kinds: kinds, limit: limit)
            let items = try await hydrator.items(page.groups, grouped: true, viewer: user, context: context)
            let next = page.hasMore ? page.groups.last.map { KeysetCursor.encodeID($0.newest.id) } : nil
            return try NotificationItem.page(items, nextCursor: next)
        }
        let rows = try await store.page(of: user, before: before, kinds: kinds, limit: limit + 1)
        let shown = Array(rows.prefix(limit))
        let items = try await hydrator.items(shown, viewer: user, context: context)
        let next = rows.count > limit ? shown.last.map { KeysetCursor.encodeID($0.id) } : nil
        return try NotificationItem.page(items, nextCursor: next)
    }
}
