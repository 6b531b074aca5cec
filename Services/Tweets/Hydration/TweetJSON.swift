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
    /// Appends the tweet of `body` with the counts and flags of its stored `row`, closed, but
    /// without `quote`, `repostedBy` and `repostId` (``TweetHydrator/Entry`` adds them).
    static func append(_ body: [UInt8], _ row: StoredTweet, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: body)
        bytes.append(contentsOf: #","likes":"#.utf8)
        bytes.append(contentsOf: String(row.likes).utf8)
        bytes.append(contentsOf: #","replies":"#.utf8)
        bytes.append(contentsOf: String(row.replies).utf8)
        bytes.append(contentsOf: #","reposts":"#.utf8)
        bytes.append(contentsOf: String(row.reposts).utf8)
        bytes.append(contentsOf: (row.likedByMe ? #","likedByMe":true"# : #","likedByMe":false"#).utf8)
        bytes.append(contentsOf: (row.repostedByMe ? #","repostedByMe":true"# : #","repostedByMe":false"#).utf8)
        bytes.append(contentsOf: (row.deleted ? #","deleted":true}"# : #","deleted":false}"#).utf8)
    }

    /// A new tweet of `body`, as `tweets.create` answers: no counts, no repost, and the quoted tweet
    /// `quote` as JSON (null when none).
    static func new(_ body: [UInt8], quote: RawJSON?) -> RawJSON {
        var bytes = body
        bytes.append(contentsOf: #","likes":0,"replies":0,"reposts":0,"likedByMe":false,"repostedByMe":false,"#.utf8)
        bytes.append(contentsOf: #""deleted":false,"quote":"#.utf8)
        bytes.append(contentsOf: (quote ?? .null).bytes)
        bytes.append(contentsOf: #","repostedBy":null,"repostId":null}"#.utf8)
        return RawJSON(unchecked: bytes)
    }

    /// The first byte of a repost's cached body, which is not an object: ``repostBody(reposter:)``.
    private static let repostMark = UInt8(ascii: "R")

    /// What is cached for a repost: its reposter's summary, marked as such (its original, read
    /// apart, is what a read shows).
    static func repostBody(reposter: UserSummary) throws -> [UInt8] {
        [repostMark] + (try WireEncoding.encode(reposter))
    }

    /// The reposter's summary in `body`, when it is a repost's (``repostBody(reposter:)``).
    static func reposter(in body: [UInt8]) -> ArraySlice<UInt8>? {
        body.first == repostMark ? body.dropFirst() : nil
    }
}
