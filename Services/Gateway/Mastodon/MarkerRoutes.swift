import AviaryAPI
import AviaryJSON
import Hummingbird

/// `/api/v1/markers`: where the user stopped reading their home timeline and notifications, kept
/// by the gateway (``MarkerStore``) so that another app or device takes up there. Setting the
/// notifications marker also marks those notifications read (`notifications.markRead`), so that
/// the unread count is counted from it, as Mastodon counts it.
extension MastodonAPI {
    func addMarkerRoutes(to router: Router<EdgeContext>) {
        endpoint(router, .get, "api/v1/markers", access: .user, scope: "read:statuses") { call, _ in
            let asked = call.params.list("timeline").compactMap(MarkerStore.Timeline.init(rawValue:))
            return EdgeResponses.json(Self.rendered(try await markers.markers(of: call.userID, among: asked)))
        }
        endpoint(router, .post, "api/v1/markers", access: .user, scope: "write:statuses") { call, _ in
            var given: [(MarkerStore.Timeline, Int64)] = []
            for timeline in MarkerStore.Timeline.allCases {
                if let id = try call.params.id("\(timeline.rawValue)[last_read_id]") { given.append((timeline, id)) }
            }
            var saved: [MarkerStore.Marker] = []
            for (timeline, id) in given {
                if timeline == .notifications {
                    _ = try await self.call(NotificationsAPI.markRead, MarkNotificationsReadParams(upTo: EntityID(id)), call)
                }
                saved.append(try await markers.set(timeline, of: call.userID, to: id))
            }
            return EdgeResponses.json(Self.rendered(saved))
        }
    }

    /// Markers as Mastodon's map of Marker entities by timeline.
    private static func rendered(_ markers: [MarkerStore.Marker]) -> JSONValue {
        .object(
            Dictionary(
                markers.map { marker in
                    (
                        marker.timeline.rawValue,
                        [
                            "last_read_id": .string(String(marker.lastReadID)), "version": .int(marker.version),
                            "updated_at": .string(RFC3339.format(marker.updatedAt)),
                        ] as JSONValue
                    )
                }, uniquingKeysWith: { first, _ in first }))
    }
}
