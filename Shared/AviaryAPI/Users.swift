import Foundation
import RPC

/// The short form of a user embedded in tweets, notifications and messages.
public struct UserSummary: Codable, Sendable, Hashable {
    /// The most users `auth.getUsers` looks up in one call.
    public static let lookupLimit = 1000

    public var id: EntityID
    public var username: String
    public var fullname: String
    public var profileImageUrl: String?

    public init(id: EntityID, username: String, fullname: String, profileImageUrl: String?) {
        self.id = id
        self.username = username
        self.fullname = fullname
        self.profileImageUrl = profileImageUrl
    }

    /// `profileImageUrl` is written as `null` when there is none, as the contract's shape lists it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(username, forKey: .username)
        try container.encode(fullname, forKey: .fullname)
        try container.encode(profileImageUrl, forKey: .profileImageUrl)
    }
}

/// Follower, following and tweet counts of a user.
public struct UserStats: Codable, Sendable, Hashable {
    public var followers: Int64
    public var following: Int64
    public var tweets: Int64

    public init(followers: Int64 = 0, following: Int64 = 0, tweets: Int64 = 0) {
        self.followers = followers
        self.following = following
        self.tweets = tweets
    }
}

/// A user as clients see one (contract §2): `isFollowed`, `followsYou` and `isCurrentUser` are
/// relative to the caller (false when anonymous); `email` and `emailVerified` only for the user
/// themself.
public struct User: Codable, Sendable, Hashable {
    public var id: EntityID
    public var username: String
    public var fullname: String
    public var bio: String
    public var profileImageUrl: String?
    public var createdAt: Date
    public var stats: UserStats
    public var isFollowed: Bool
    public var followsYou: Bool
    public var isCurrentUser: Bool
    public var email: String?
    /// Whether the user proved `email` is theirs (`auth.verifyEmail`, or a password reset by mail).
    public var emailVerified: Bool?

    public init(
        id: EntityID, username: String, fullname: String, bio: String, profileImageUrl: String?, createdAt: Date,
        stats: UserStats, isFollowed: Bool, followsYou: Bool, isCurrentUser: Bool, email: String? = nil,
        emailVerified: Bool? = nil
    ) {
        self.id = id
        self.username = username
        self.fullname = fullname
        self.bio = bio
        self.profileImageUrl = profileImageUrl
        self.createdAt = createdAt
        self.stats = stats
        self.isFollowed = isFollowed
        self.followsYou = followsYou
        self.isCurrentUser = isCurrentUser
        self.email = email
        self.emailVerified = emailVerified
    }

    /// `profileImageUrl` is written as `null` when there is none; `email` only appears for the
    /// user themself.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(username, forKey: .username)
        try container.encode(fullname, forKey: .fullname)
        try container.encode(bio, forKey: .bio)
        try container.encode(profileImageUrl, forKey: .profileImageUrl)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(stats, forKey: .stats)
        try container.encode(isFollowed, forKey: .isFollowed)
        try container.encode(followsYou, forKey: .followsYou)
        try container.encode(isCurrentUser, forKey: .isCurrentUser)
        try container.encodeIfPresent(email, forKey: .email)
        try container.encodeIfPresent(emailVerified, forKey: .emailVerified)
    }

    public var summary: UserSummary {
        UserSummary(id: id, username: username, fullname: fullname, profileImageUrl: profileImageUrl)
    }
}

/// The caller's relation to one user.
public struct Relationship: Codable, Sendable, Hashable {
    public var isFollowed: Bool
    public var followsYou: Bool
    /// The caller blocks them.
    public var blocking: Bool
    /// They block the caller.
    public var blockedBy: Bool
    /// The caller mutes them (`mutingNotifications`: their notifications too).
    public var muting: Bool
    public var mutingNotifications: Bool

    public init(
        isFollowed: Bool, followsYou: Bool, blocking: Bool = false, blockedBy: Bool = false, muting: Bool = false,
        mutingNotifications: Bool = false
    ) {
        self.isFollowed = isFollowed
        self.followsYou = followsYou
        self.blocking = blocking
        self.blockedBy = blockedBy
        self.muting = muting
        self.mutingNotifications = mutingNotifications
    }
}
