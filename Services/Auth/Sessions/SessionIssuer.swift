import AuthTokens
import Foundation
import ServiceKit

/// A session about to be recorded: its id and its first refresh token.
struct NewSession: Sendable {
    let id: Int64
    let refreshToken: RefreshToken
}

/// The tokens a sign-in or a refresh hands out, and the session they belong to.
struct IssuedTokens: Sendable {
    var sessionID: Int64
    var accessToken: String
    var refreshToken: String
    var expiresAt: Date
}

/// Starts sessions and signs their access tokens (`AccessTokenIssuer`, lifetime
/// `AVIARY_TOKEN_LIFETIME_SECONDS`).
struct SessionIssuer: Sendable {
    let accessTokens: AccessTokenIssuer
    let sessions: SessionStore
    let ids: SnowflakeGenerator

    func prepare() -> NewSession {
        NewSession(id: ids.next(), refreshToken: .generate())
    }

    /// Records a new session of `userID` and returns its tokens; nil when the account is
    /// suspended. The access token is signed while the session row is written (it needs only the
    /// session's id): one wait, not two. Nothing is handed out unless the row was written.
    func start(userID: Int64) async throws -> IssuedTokens? {
        let session = prepare()
        async let issued = tokens(userID: userID, sessionID: session.id, refreshToken: session.refreshToken)
        guard try await sessions.insert(sessionID: session.id, userID: userID, refreshHash: session.refreshToken.hash) else {
            _ = try? await issued
            return nil
        }
        return try await issued
    }

    /// Deletes a session started and never handed out (its sign-in failed after all).
    func discard(_ session: IssuedTokens) async throws {
        try await sessions.delete(sessionID: session.sessionID)
    }

    func tokens(userID: Int64, sessionID: Int64, refreshToken: RefreshToken) async throws -> IssuedTokens {
        let access = try await accessTokens.issue(userID: userID, sessionID: sessionID)
        return IssuedTokens(sessionID: sessionID, accessToken: access.token, refreshToken: refreshToken.token, expiresAt: access.expiresAt)
    }
}
