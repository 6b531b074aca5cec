import RPC

/// What a notification tells its recipient about (contract §2, `Notification.type`).
enum NotificationKind: String, Codable, Sendable, Hashable, JSONSchemaEnum {
    case follow
    case like
    case reply
    case mention
    case message

    /// Likes of one tweet and follows of the recipient may be grouped by `notifications.list`.
    var isGroupable: Bool { self == .like || self == .follow }
}
