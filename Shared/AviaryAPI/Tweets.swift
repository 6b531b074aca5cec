import Foundation
import RPC

/// A tweet as clients see it (contract §2): its author and the users it mentions or replies to as
/// summaries, its counts, and `likedByMe` relative to the caller (false when anonymous).
///
/// A deleted tweet that something still refers to (a reply's parent, a like, a quote) keeps its id,
/// author, time and reply target but has `deleted: true`, `text: null` and no mentions, hashtags or
/// media.
///
/// An entry of a timeline or a page that is a repost is the original tweet, with `repostedBy` (who
/// reposted it) and `repostId` (the entry's own id, which cursors and `tweets.unrepost` follow).
@dynamicMemberLookup
public struct Tweet: Codable, Sendable, Hashable {
    /// Everything but the counts and the flags; its fields read and write as the tweet's own
    /// (`tweet.text`).
    public var body: TweetBody
    public var likes: Int64
    public var replies: Int64
    public var likedByMe: Bool
    public var deleted: Bool
    public var reposts: Int64
    public var repostedByMe: Bool
    /// Who reposted the tweet, when this entry is their repost.
    public var repostedBy: UserSummary?
    /// The repost's own id, when this entry is a repost.
    public var repostId: EntityID?
    /// The tweet this one quotes (`quoteOf`), one level deep: its own quote is left null. Null too
    /// when the quoted author is suspended or blocked either way with the reader; deleted, it shows
    /// as deleted.
    public var quote: Tweet? {
        get { quoted.first }
        set { quoted = newValue.map { [$0] } ?? [] }
    }
    /// The entry's own id, which a page's cursor follows: the repost's for a repost, else the tweet's.
    public var entryId: EntityID { repostId ?? body.id }
    /// `quote`'s storage: a struct cannot hold itself inline, an array can.
    private var quoted: [Tweet]

    public init(
        id: EntityID, author: UserSummary, text: String?, createdAt: Date, replyTo: EntityID? = nil,
        replyToUser: UserSummary? = nil, mentions: [UserSummary] = [], hashtags: [String] = [], media: [Media] = [],
        quoteOf: EntityID? = nil, likes: Int64 = 0, replies: Int64 = 0, likedByMe: Bool = false, deleted: Bool = false,
        reposts: Int64 = 0, repostedByMe: Bool = false, repostedBy: UserSummary? = nil, repostId: EntityID? = nil,
        quote: Tweet? = nil
    ) {
        body = TweetBody(
            id: id, author: author, text: text, createdAt: createdAt, replyTo: replyTo, replyToUser: replyToUser,
            mentions: mentions, hashtags: hashtags, media: media, quoteOf: quoteOf)
        self.likes = likes
        self.replies = replies
        self.likedByMe = likedByMe
        self.deleted = deleted
        self.reposts = reposts
        self.repostedByMe = repostedByMe
        self.repostedBy = repostedBy
        self.repostId = repostId
        quoted = quote.map { [$0] } ?? []
    }

    public subscript<Value>(dynamicMember field: WritableKeyPath<TweetBody, Value>) -> Value {
        get { body[keyPath: field] }
        set { body[keyPath: field] = newValue }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: TweetKeys.self)
        body = try TweetBody(from: container)
        likes = try container.decode(Int64.self, forKey: .likes)
        replies = try container.decode(Int64.self, forKey: .replies)
        likedByMe = try container.decode(Bool.self, forKey: .likedByMe)
        deleted = try container.decodeIfPresent(Bool.self, forKey: .deleted) ?? false
        reposts = try container.decodeIfPresent(Int64.self, forKey: .reposts) ?? 0
        repostedByMe = try container.decodeIfPresent(Bool.self, forKey: .repostedByMe) ?? false
        repostedBy = try container.decodeIfPresent(UserSummary.self, forKey: .repostedBy)
        repostId = try container.decodeIfPresent(EntityID.self, forKey: .repostId)
        quoted = try container.decodeIfPresent(Tweet.self, forKey: .quote).map { [$0] } ?? []
    }

    /// Absent values are written as `null`, as the contract shows them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: TweetKeys.self)
        try body.encode(into: &container)
        try container.encode(likes, forKey: .likes)
        try container.encode(replies, forKey: .replies)
        try container.encode(likedByMe, forKey: .likedByMe)
        try container.encode(deleted, forKey: .deleted)
        try container.encode(reposts, forKey: .reposts)
        try container.encode(repostedByMe, forKey: .repostedByMe)
        try container.encode(quote, forKey: .quote)
        try container.encode(repostedBy, forKey: .repostedBy)
        try container.encode(repostId, forKey: .repostId)
    }
}

/// The part of a ``Tweet`` that is the same for every reader and changes only with the tweet or its
/// users: every field but the counts, `likedByMe` and `deleted` (what the tweets service caches).
public struct TweetBody: Codable, Sendable, Hashable {
    public var id: EntityID
    public var author: UserSummary
    /// Null only when the tweet is deleted.
    public var text: String?
    public var createdAt: Date
    /// The tweet this one replies to.
    public var replyTo: EntityID?
    /// The author of `replyTo`.
    public var replyToUser: UserSummary?
    public var mentions: [UserSummary]
    /// Lower-cased, without `#`, in order of first appearance.
    public var hashtags: [String]
    public var media: [Media]
    /// The tweet this one quotes (`quote` holds it).
    public var quoteOf: EntityID?

    public init(
        id: EntityID, author: UserSummary, text: String?, createdAt: Date, replyTo: EntityID?,
        replyToUser: UserSummary?, mentions: [UserSummary], hashtags: [String], media: [Media], quoteOf: EntityID? = nil
    ) {
        self.id = id
        self.author = author
        self.text = text
        self.createdAt = createdAt
        self.replyTo = replyTo
        self.replyToUser = replyToUser
        self.mentions = mentions
        self.hashtags = hashtags
        self.media = media
        self.quoteOf = quoteOf
    }

    public init(from decoder: any Decoder) throws {
        try self.init(from: decoder.container(keyedBy: TweetKeys.self))
    }

    /// Reads the fields from a tweet's object.
    init(from container: KeyedDecodingContainer<TweetKeys>) throws {
        id = try container.decode(EntityID.self, forKey: .id)
        author = try container.decode(UserSummary.self, forKey: .author)
        text = try container.decodeIfPresent(String.self, forKey: .text)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        replyTo = try container.decodeIfPresent(EntityID.self, forKey: .replyTo)
        replyToUser = try container.decodeIfPresent(UserSummary.self, forKey: .replyToUser)
        mentions = try container.decodeIfPresent([UserSummary].self, forKey: .mentions) ?? []
        hashtags = try container.decodeIfPresent([String].self, forKey: .hashtags) ?? []
        media = try container.decodeIfPresent([Media].self, forKey: .media) ?? []
        quoteOf = try container.decodeIfPresent(EntityID.self, forKey: .quoteOf)
    }

    /// Absent values are written as `null`, as the contract shows them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: TweetKeys.self)
        try encode(into: &container)
    }

    /// Writes the fields into a tweet's object.
    func encode(into container: inout KeyedEncodingContainer<TweetKeys>) throws {
        try container.encode(id, forKey: .id)
        try container.encode(author, forKey: .author)
        try container.encode(text, forKey: .text)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(replyTo, forKey: .replyTo)
        try container.encode(replyToUser, forKey: .replyToUser)
        try container.encode(mentions, forKey: .mentions)
        try container.encode(hashtags, forKey: .hashtags)
        try container.encode(media, forKey: .media)
        try container.encode(quoteOf, forKey: .quoteOf)
    }
}

/// The members of a tweet's JSON object.
enum TweetKeys: String, CodingKey {
    case id, author, text, createdAt, replyTo, replyToUser, mentions, hashtags, media, quoteOf, likes, replies, likedByMe
    case deleted, reposts, repostedByMe, quote, repostedBy, repostId
}

/// The result of `tweets.like` and `tweets.unlike`: the tweet's like count after the call and
/// whether the caller now likes it.
public struct LikeState: Codable, Sendable, Hashable {
    public var likes: Int64
    public var likedByMe: Bool

    public init(likes: Int64, likedByMe: Bool) {
        self.likes = likes
        self.likedByMe = likedByMe
    }
}

/// The result of `tweets.repost` and `tweets.unrepost`: the tweet's repost count after the call,
/// whether the caller now reposts it, and the id of their repost (null after `unrepost`), which
/// `tweets.get` shows as the entry their followers see.
public struct RepostState: Codable, Sendable, Hashable {
    public var reposts: Int64
    public var repostedByMe: Bool
    public var repostId: EntityID?

    public init(reposts: Int64, repostedByMe: Bool, repostId: EntityID?) {
        self.reposts = reposts
        self.repostedByMe = repostedByMe
        self.repostId = repostId
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(reposts, forKey: .reposts)
        try container.encode(repostedByMe, forKey: .repostedByMe)
        try container.encode(repostId, forKey: .repostId)
    }

    private enum CodingKeys: String, CodingKey {
        case reposts, repostedByMe, repostId
    }
}
