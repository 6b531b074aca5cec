import Foundation
import RPC

/// auth's methods that start and renew a session, as apps (and ``AviaryClient``) call them.
public enum SessionAPI {
    public static let register = RPCMethod<RegisterParams, AuthResult>(
        "auth.register", access: .anonymous,
        summary: """
            Creates an account and signs it in. email: unique, at most 254 characters; username: 3-15 of a-z, 0-9 \
            and _, unique whatever the case, some names reserved; fullname: 1-50 characters; bio: at most 160; \
            password: 8-128 characters. profileImageId is refused here (validation): an avatar must be uploaded by \
            its owner, so upload it (media purpose avatar) once registered and set it with auth.updateProfile. A taken \
            email or username is a conflict naming the field. Limited per network address (5 an hour by default).
            """)

    public static let login = RPCMethod<LoginParams, AuthResult>(
        "auth.login", access: .anonymous,
        summary: """
            Signs in with an email or username (login) and password, starting a new session. A wrong login or \
            password is unauthenticated (the same answer either way). Limited per account and per network address.
            """)

    public static let refresh = RPCMethod<RefreshParams, TokenPair>(
        "auth.refresh", access: .anonymous,
        summary: """
            Exchanges a refresh token for a new access and refresh token of the same session; the old refresh token \
            is spent. Presenting a spent refresh token again ends the whole session (it was copied).
            """)
}

/// Params of `auth.register`.
public struct RegisterParams: Codable, Sendable {
    public var email: String
    public var password: String
    public var username: String
    public var fullname: String
    public var bio: String?
    public var profileImageId: EntityID?

    public init(email: String, password: String, username: String, fullname: String, bio: String? = nil) {
        self.email = email
        self.password = password
        self.username = username
        self.fullname = fullname
        self.bio = bio
    }
}

/// Params of `auth.login`.
public struct LoginParams: Codable, Sendable {
    /// An email address or a username.
    public var login: String
    public var password: String

    public init(login: String, password: String) {
        self.login = login
        self.password = password
    }
}

/// Params of `auth.refresh`.
public struct RefreshParams: Codable, Sendable {
    public var refreshToken: String

    public init(refreshToken: String) {
        self.refreshToken = refreshToken
    }
}

/// What `auth.register`, `auth.login` and `auth.loginWithGoogle` answer.
public struct AuthResult: Codable, Sendable {
    /// The signed-in user, with their email.
    public var user: User
    /// Sent as `_meta.token` on calls that act as the user; short-lived.
    public var accessToken: String
    /// Exchanged once with `auth.refresh` for a new pair; opaque.
    public var refreshToken: String
    /// When `accessToken` stops working.
    public var expiresAt: Date
    /// `auth.loginWithGoogle` only: whether this sign-in created the account.
    public var created: Bool?

    public init(user: User, accessToken: String, refreshToken: String, expiresAt: Date, created: Bool? = nil) {
        self.user = user
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.created = created
    }
}

/// What `auth.refresh` answers: a new pair of tokens for the same session.
public struct TokenPair: Codable, Sendable {
    public var accessToken: String
    public var refreshToken: String
    public var expiresAt: Date

    public init(accessToken: String, refreshToken: String, expiresAt: Date) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }
}
