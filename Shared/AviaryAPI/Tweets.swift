import Foundation
import RPC

/// A tweet as clients see it (contract §2): its author and the users it mentions or replies to as
/// summaries, its counts, and `likedByMe` relative to the caller (false when anonymous).
///
/// A deleted tweet that something still refers to (a reply's parent, a like) keeps its id, author,
/// time and reply target but has `deleted: true`, `text: null` and no mentions, hashtags or media.
@dynamicMemberLookup
public struct Tweet: Codable, Sendable, Hashable {
    /// Everything but the counts and the flags; its fields read and write as the tweet's own
    /// (`tweet.text`).
    public var body: TweetBody
    public var likes: Int64
    public var replies: Int64
    public var likedByMe: Bool
    public var deleted: Bool

    public init(
        id: EntityID, author: UserSummary, text: String?, createdAt: Date, replyTo: EntityID? = nil,
        replyToUser: UserSummary? = nil, mentions: [UserSummary] = [], hashtags: [String] = [], media: [Media] = [],
        likes: Int64 = 0, replies: Int64 = 0, likedByMe: Bool = false, deleted: Bool = false
    ) {
        body = TweetBody(
            id: id, author: author, text: text, createdAt: createdAt, replyTo: replyTo, replyToUser: replyToUser,
            mentions: mentions, hashtags: hashtags, media: media)
        self.likes = likes
        self.replies = replies
        self.likedByMe = likedByMe
        self.deleted = deleted
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
    }

    /// Absent values are written as `null`, as the contract shows them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: TweetKeys.self)
        try body.encode(into: &container)
        try container.encode(likes, forKey: .likes)
        try container.encode(replies, forKey: .replies)
        try container.encode(likedByMe, forKey: .likedByMe)
        try container.encode(deleted, forKey: .deleted)
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

    public init(
        id: EntityID, author: UserSummary, text: String?, createdAt: Date, replyTo: EntityID?,
        replyToUser: UserSummary?, mentions: [UserSummary], hashtags: [String], media: [Media]
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
    }
}

/// The members of a tweet's JSON object.
enum TweetKeys: String, CodingKey {
    case id, author, text, createdAt, replyTo, replyToUser, mentions, hashtags, media, likes, replies, likedByMe, deleted
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
