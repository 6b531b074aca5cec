import RPC

/// auth's methods for apps beyond starting a session (``SessionAPI``): profiles, passwords, search.
public enum AccountAPI {
    public static let loginWithGoogle = RPCMethod<LoginWithGoogleParams, AuthResult>(
        "auth.loginWithGoogle", access: .anonymous,
        summary: """
            Signs in with a Google OpenID Connect ID token (idToken). The first sign-in creates an account \
            (created: true) or links the account with the same email. Google must have verified the email; \
            registering did not, so linking an account registered with a password removes that password and \
            ends its sessions (whoever registered someone else's address loses the account to its owner).
            """)

    public static let logout = RPCMethod<Empty, Empty>(
        "auth.logout", access: .user,
        summary: "Ends the caller's session at once: its access and refresh tokens stop working on every service.")

    public static let me = RPCMethod<Empty, User>(
        "auth.me", access: .user, summary: "The caller's own profile, with their email.")

    public static let getUser = RPCMethod<GetUserParams, User>(
        "auth.getUser", access: .anonymous,
        summary: """
            One user's profile, by userId or by username (give one). Counts and relations (isFollowed, followsYou) \
            are relative to the caller; anonymous callers see them false.
            """)

    public static let updateProfile = RPCMethod<UpdateProfileParams, User>(
        "auth.updateProfile", access: .user,
        summary: """
            Changes the caller's fullname (1-50 characters), bio (at most 160), username (unique, 3-15 of a-z, 0-9 \
            and _) or profile image (profileImageId: a finished upload of the caller's with purpose avatar, checked \
            with the media service: anything else is a validation error, media unreachable is unavailable); omitted \
            fields stay. Returns the updated profile.
            """)

    public static let changePassword = RPCMethod<ChangePasswordParams, ChangePasswordResult>(
        "auth.changePassword", access: .user,
        summary: """
            Replaces the caller's password (currentPassword, newPassword of 8-128 characters) and ends every other \
            session of the account; the calling session stays signed in.
            """)

    public static let deleteAccount = RPCMethod<DeleteAccountParams, DeleteResult>(
        "auth.deleteAccount", access: .user,
        summary: """
            Deletes the caller's account for good (password: the account's password; an account that signs in \
            only with Google sets one by auth.requestPasswordReset first). Its sessions end at once and its \
            profile is gone; every service then erases its tweets, likes, reposts, bookmarks, follows, blocks, \
            mutes, messages' text and media, reactions, group memberships and notifications. The email is free at \
            once, the username after 30 days. Returns {deleted: true}.
            """)

    public static let searchUsers = RPCMethod<SearchParams, Page<User>>(
        "auth.searchUsers", access: .anonymous,
        summary: """
            Finds users by username or full name: prefixes, and names typed with a typo. Accounts the caller \
            follows come first, then the best matches. query: 1-50 characters (a leading @ is ignored); paged \
            with limit and cursor.
            """)
}

/// Params of `auth.loginWithGoogle`.
public struct LoginWithGoogleParams: Codable, Sendable {
    /// The OpenID Connect ID token Google gave the client.
    public var idToken: String

    public init(idToken: String) {
        self.idToken = idToken
    }
}

/// Params of `auth.getUser`: one of the two.
public struct GetUserParams: Codable, Sendable {
    public var userId: EntityID?
    public var username: String?

    public init(userId: EntityID? = nil, username: String? = nil) {
        self.userId = userId
        self.username = username
    }
}

/// Params of `auth.updateProfile`: only the fields to change.
public struct UpdateProfileParams: Codable, Sendable {
    /// What becomes of the profile image (`profileImageId`): an id sets it, null removes it, left
    /// out it stays.
    public enum ProfileImageChange: Sendable, Hashable {
        case keep, remove
        case set(EntityID)
    }

    public var fullname: String?
    public var bio: String?
    public var username: String?
    public var profileImage: ProfileImageChange

    public init(fullname: String? = nil, bio: String? = nil, username: String? = nil, profileImage: ProfileImageChange = .keep) {
        self.fullname = fullname
        self.bio = bio
        self.username = username
        self.profileImage = profileImage
    }

    private enum CodingKeys: String, CodingKey {
        case fullname, bio, username, profileImageId
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        fullname = try container.decodeIfPresent(String.self, forKey: .fullname)
        bio = try container.decodeIfPresent(String.self, forKey: .bio)
        username = try container.decodeIfPresent(String.self, forKey: .username)
        profileImage = .keep
        if container.contains(.profileImageId) {
            profileImage = try container.decodeIfPresent(EntityID.self, forKey: .profileImageId).map { .set($0) } ?? .remove
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(fullname, forKey: .fullname)
        try container.encodeIfPresent(bio, forKey: .bio)
        try container.encodeIfPresent(username, forKey: .username)
        switch profileImage {
        case .keep: break
        case .remove: try container.encodeNil(forKey: .profileImageId)
        case .set(let id): try container.encode(id, forKey: .profileImageId)
        }
    }
}

/// Params of `auth.changePassword`.
public struct ChangePasswordParams: Codable, Sendable {
    public var currentPassword: String
    public var newPassword: String

    public init(currentPassword: String, newPassword: String) {
        self.currentPassword = currentPassword
        self.newPassword = newPassword
    }
}

/// Params of `auth.deleteAccount`.
public struct DeleteAccountParams: Codable, Sendable {
    public var password: String

    public init(password: String) {
        self.password = password
    }
}

/// What `auth.changePassword` answers.
public struct ChangePasswordResult: Codable, Sendable {
    /// How many other sessions of the account were ended.
    public var endedSessions: Int

    public init(endedSessions: Int) {
        self.endedSessions = endedSessions
    }
}
