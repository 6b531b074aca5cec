import AviaryAPI
import AviaryJSON
import Foundation

extension TweetBody {
    /// The JSON object without its closing brace.
    func open() throws -> [UInt8] {
        var bytes = try WireEncoding.encode(self)
        bytes.removeLast()
        return bytes
    }
}

/// Tweets written as JSON bytes, spliced from cached bodies (pages of them: `PageJSON`).
enum TweetJSON {
    /// A whole tweet: `body` (an open object) with the fields that change on every read.
    static func finish(_ body: [UInt8], likes: Int64, replies: Int64, likedByMe: Bool, deleted: Bool) -> RawJSON {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(body.count + 80)
        append(body, likes: likes, replies: replies, likedByMe: likedByMe, deleted: deleted, to: &bytes)
        return RawJSON(unchecked: bytes)
    }

    /// A whole tweet: `body` with the counts and flags of its stored `row`.
    static func finish(_ body: [UInt8], _ row: StoredTweet) -> RawJSON {
        finish(body, likes: row.likes, replies: row.replies, likedByMe: row.likedByMe, deleted: row.deleted)
    }

    /// Appends the tweet of `body` with the counts and flags of its stored `row`.
    static func append(_ body: [UInt8], _ row: StoredTweet, to bytes: inout [UInt8]) {
        append(body, likes: row.likes, replies: row.replies, likedByMe: row.likedByMe, deleted: row.deleted, to: &bytes)
    }

    /// Appends a whole tweet: `body` (an open object) with the fields that change on every read.
    static func append(
        _ body: [UInt8], likes: Int64, replies: Int64, likedByMe: Bool, deleted: Bool, to bytes: inout [UInt8]
    ) {
        bytes.append(contentsOf: body)
        bytes.append(contentsOf: #","likes":"#.utf8)
        bytes.append(contentsOf: String(likes).utf8)
        bytes.append(contentsOf: #","replies":"#.utf8)
        bytes.append(contentsOf: String(replies).utf8)
        bytes.append(contentsOf: (likedByMe ? #","likedByMe":true"# : #","likedByMe":false"#).utf8)
        bytes.append(contentsOf: (deleted ? #","deleted":true}"# : #","deleted":false}"#).utf8)
    }
}
