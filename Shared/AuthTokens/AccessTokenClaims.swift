import Foundation
import JWTKit

/// The claims of an Aviary access token: whose it is (`sub`), which session (`sid`), and when it
/// stops working (`exp`).
public struct AccessTokenClaims: JWTPayload, Sendable {
    public static let issuer = "aviary"

    public var sub: SubjectClaim
    public var sid: String
    public var iat: IssuedAtClaim
    public var exp: ExpirationClaim
    public var iss: IssuerClaim

    public init(userID: Int64, sessionID: Int64, issuedAt: Date, expiresAt: Date) {
        sub = SubjectClaim(value: String(userID))
        sid = String(sessionID)
        iat = IssuedAtClaim(value: issuedAt)
        exp = ExpirationClaim(value: expiresAt)
        iss = IssuerClaim(value: Self.issuer)
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        guard iss.value == Self.issuer else { throw JWTError.claimVerificationFailure(failedClaim: iss, reason: "wrong issuer") }
    }
}
