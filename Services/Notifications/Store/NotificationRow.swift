import AviaryAPI
import Foundation
import Postgres

/// One stored notification.
struct NotificationRow: Sendable, Hashable {
    var id: Int64
    var recipient: Int64
    var kind: NotificationKind
    var actor: Int64
    var tweet: Int64?
    var conversation: Int64?
    var createdAt: Date
    var read: Bool

    /// The columns `init(row:)` reads, in order.
    static let columns = "id, recipient_id, type, actor_id, tweet_id, conversation_id, created_at, read"
}

extension NotificationRow {
    /// The row's ``NotificationRow/columns`` from column `first` on.
    init(row: PostgresRow, at first: Int = 0) throws {
        id = try row.decode(Int64.self, at: first)
        recipient = try row.decode(Int64.self, at: first + 1)
        kind = try row.decode(NotificationKind.self, at: first + 2)
        actor = try row.decode(Int64.self, at: first + 3)
        tweet = try row.decode(Int64?.self, at: first + 4)
        conversation = try row.decode(Int64?.self, at: first + 5)
        createdAt = try row.decode(Date.self, at: first + 6)
        read = try row.decode(Bool.self, at: first + 7)
    }
}

/// Stored as its raw value: a type no case names fails the row's decoding rather than passing for a follow.
extension NotificationKind: PostgresDecodable {}

/// A notification to store, from an event: unique per recipient by `key`.
struct NewNotification: Sendable, Hashable {
    var recipient: Int64
    var kind: NotificationKind
    var actor: Int64
    var tweet: Int64?
    var conversation: Int64?
    var key: String
    var createdAt: Date
}

/// The unique keys of notifications, per recipient: the same event always makes the same key.
enum NotificationKey {
    static func follow(actor: Int64) -> String { "f:\(actor)" }
    static func like(tweet: Int64, actor: Int64) -> String { "l:\(tweet):\(actor)" }
    /// Every like of `tweet`, for a prefix match.
    static func likes(tweet: Int64) -> String { "l:\(tweet):" }
    static func repost(tweet: Int64, actor: Int64) -> String { "p:\(tweet):\(actor)" }
    /// Every repost of `tweet`, for a prefix match.
    static func reposts(tweet: Int64) -> String { "p:\(tweet):" }
    static func quote(tweet: Int64) -> String { "q:\(tweet)" }
    static func reply(tweet: Int64) -> String { "r:\(tweet)" }
    static func mention(tweet: Int64) -> String { "m:\(tweet)" }
    static func message(_ message: Int64) -> String { "d:\(message)" }
}
