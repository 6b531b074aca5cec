import AviaryAPI
import AviaryJSON
import Logging
import RPC
import ServiceKit

/// Live delivery of notifications through the service's ``LiveHub``: events
/// `{type: "notification", notification}` when one is made, `{type: "withdrawn", notificationId}`
/// when an unlike, an unfollow or a deletion takes one back.
struct NotificationFeed: Sendable {
    let hub: LiveHub
    let hydrator: NotificationHydrator

    /// Publishes what a batch changed. Best effort: the notifications are stored already, so a
    /// failure only costs liveness; recipients whose notifications cannot be hydrated now are told
    /// to resync (fetch the list) instead.
    func publish(_ outcome: NotificationStore.Outcome, logger: Logger) async {
        var events: [(user: Int64, event: RawJSON)] = []
        if !outcome.added.isEmpty {
            do {
                // Hydrated for no viewer: one call for every recipient of the batch (`likedByMe` is false).
                let items = try await hydrator.items(outcome.added, viewer: nil, context: nil)
                let byID = Dictionary(items.map { ($0.id.value, $0) }, uniquingKeysWith: { first, _ in first })
                for row in outcome.added {
                    guard let item = byID[row.id] else { continue }
                    events.append((row.recipient, try Self.event(item)))
                }
            } catch {
                logger.warning(
                    "new notifications could not be hydrated for live delivery; their recipients are told to resync",
                    metadata: ["error": "\(String(reflecting: error))"])
                for recipient in Set(outcome.added.map(\.recipient)) {
                    events.append((recipient, Self.resync))
                }
            }
        }
        for (id, recipient) in outcome.withdrawn {
            events.append((recipient, Self.withdrawn(id)))
        }
        do {
            try await hub.publish(events)
        } catch {
            logger.warning("live delivery failed to publish", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    static func event(_ item: NotificationItem) throws -> RawJSON {
        try NotificationEvent.json(item)
    }

    static func withdrawn(_ id: Int64) -> RawJSON {
        RawJSON(unchecked: Array(#"{"type":"withdrawn","notificationId":"\#(id)"}"#.utf8))
    }

    static let resync = RawJSON(unchecked: Array(#"{"type":"resync"}"#.utf8))

    /// The notification id a `notification` event carries; nil for other events.
    static func notificationID(of event: RawJSON) -> Int64? {
        (try? event.decode(NotificationEvent.Peek.self))?.notification?.id.value
    }
}
