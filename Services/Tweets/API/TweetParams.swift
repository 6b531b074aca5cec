import AviaryAPI
import RPC

/// `tweets.create` params.
struct CreateParams: Decodable, Sendable {
    var text: String
    var replyTo: EntityID?
    var mediaIds: [EntityID]?
    /// The same key from the same author returns the first tweet instead of making a second.
    var idempotencyKey: String?
}

/// Params naming one tweet.
struct TweetParams: Decodable, Sendable {
    var tweetId: EntityID
}

/// `tweets.replies` params.
struct RepliesParams: Decodable, Sendable {
    var tweetId: EntityID
    var limit: PageLimit?
    var cursor: String?
}

/// `tweets.byUser` params.
struct ByUserParams: Decodable, Sendable {
    var userId: EntityID
    var limit: PageLimit?
    var cursor: String?
    /// Whether replies are listed too (default false).
    var includeReplies: Bool?
}

/// `tweets.likedBy` params.
struct LikedByParams: Decodable, Sendable {
    var userId: EntityID
    var limit: PageLimit?
    var cursor: String?
}

/// `tweets.search` params.
struct SearchParams: Decodable, Sendable {
    var query: String
    var limit: PageLimit?
    var cursor: String?
}

/// The largest batches the internal methods take.
enum Batch {
    static let tweets = 1000
    static let authors = 5000
    static let recent = 800
    static let users = 1000

    /// The ids as numbers; more than `maximum` is a `validation` error naming `field`.
    static func values(_ ids: [EntityID], maximum: Int, field: String) throws(RPCError) -> [Int64] {
        guard ids.count <= maximum else {
            throw RPCError.validation("\(field) must hold at most \(maximum) ids, got \(ids.count)", field: field)
        }
        return ids.map(\.value)
    }
}
