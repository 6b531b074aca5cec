import Foundation
import JWTKit

/// Signs access tokens (auth only).
public struct AccessTokenIssuer: Sendable {
    public let lifetime: Duration
    private let keys: JWTKeyCollection
    private let keyID: String

    public init(keys: TokenKeys, lifetime: Duration = .seconds(15 * 60)) async throws {
        guard let signingKey = keys.signingKey, let keyID = keys.signingKeyID else {
            throw TokenKeyError("no token signing key is configured")
        }
        self.lifetime = lifetime
        self.keyID = keyID
        self.keys = await JWTKeyCollection().add(eddsa: EdDSA.PrivateKey(backing: signingKey), kid: JWKIdentifier(string: keyID))
    }

    /// A token for `userID`'s session `sessionID`, and when it expires.
    public func issue(userID: Int64, sessionID: Int64, now: Date = Date()) async throws -> (token: String, expiresAt: Date) {
        let expiresAt = now.addingTimeInterval(Double(lifetime.components.seconds))
        let claims = AccessTokenClaims(userID: userID, sessionID: sessionID, issuedAt: now, expiresAt: expiresAt)
        return (try await keys.sign(claims, kid: JWKIdentifier(string: keyID)), expiresAt)
    }
}

/// Keys are missing or malformed.
public struct TokenKeyError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
