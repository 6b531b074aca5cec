import AviaryAPI
import AviaryJSON
import Foundation

extension NotificationItem {
    /// The page of `items`.
    static func page(_ items: [NotificationItem], nextCursor: String?) throws -> RawJSON {
        var page = PageJSON()
        for item in items { page.append(try WireEncoding.encode(item)) }
        return page.finish(nextCursor: nextCursor)
    }
}

/// The `event` of a push: `{type: "notification", notification}`.
enum NotificationEvent {
    static func json(_ item: NotificationItem) throws -> RawJSON {
        var bytes = Array(#"{"type":"notification","notification":"#.utf8)
        bytes.append(contentsOf: try WireEncoding.encode(item))
        bytes.append(UInt8(ascii: "}"))
        return RawJSON(unchecked: bytes)
    }

    /// The id of the notification an encoded event carries, to drop duplicates after a catch-up.
    struct Peek: Decodable {
        struct Inner: Decodable { var id: EntityID }
        var notification: Inner?
    }
}
