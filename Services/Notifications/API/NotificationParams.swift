import AviaryAPI
import RPC

/// `notifications.list` params.
struct ListParams: Decodable, Sendable {
    var limit: PageLimit?
    var cursor: String?
    /// Only these kinds; all when omitted or empty.
    var types: [NotificationKind]?
    /// Group likes of the same tweet and follows that fall in the same window into one item.
    var grouped: Bool?
}

/// `notifications.markRead` params.
struct MarkReadParams: Decodable, Sendable {
    /// Marks this notification and every older one read; all when omitted.
    var upTo: EntityID?
}

/// `notifications.subscribe` params.
struct SubscribeParams: Decodable, Sendable {
    /// The id of the last notification the client saw: those after it are pushed first, oldest first.
    var lastId: EntityID?
}

/// `notifications.unsubscribe` params.
struct UnsubscribeParams: Decodable, Sendable {
    var subscription: String
}
