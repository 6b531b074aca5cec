import AviaryAPI
import Foundation

/// What `auth.register`, `auth.login` and `auth.loginWithGoogle` answer.
struct AuthResult: Codable, Sendable {
    /// The signed-in user, with their email.
    var user: User
    /// Sent as `_meta.token` on calls that act as the user; short-lived.
    var accessToken: String
    /// Exchanged once with `auth.refresh` for a new pair; opaque.
    var refreshToken: String
    /// When `accessToken` stops working.
    var expiresAt: Date
    /// `auth.loginWithGoogle` only: whether this sign-in created the account.
    var created: Bool?

    init(user: User, tokens: IssuedTokens, created: Bool? = nil) {
        self.user = user
        accessToken = tokens.accessToken
        refreshToken = tokens.refreshToken
        expiresAt = tokens.expiresAt
        self.created = created
    }
}

/// What `auth.refresh` answers: a new pair of tokens for the same session.
struct TokenPair: Codable, Sendable {
    var accessToken: String
    var refreshToken: String
    var expiresAt: Date
}
