import JWTKit

/// The claims of a Google (OpenID Connect) ID token that sign-in uses. The signature and expiry are
/// checked by jwt-kit; issuer and audience by ``GoogleIDTokenVerifier``, against configuration.
struct GoogleIDTokenClaims: JWTPayload {
    enum CodingKeys: String, CodingKey {
        case issuer = "iss"
        case subject = "sub"
        case audience = "aud"
        case expires = "exp"
        case email
        case emailVerified = "email_verified"
        case name
    }

    var issuer: IssuerClaim
    /// Google's stable id of the account; the email may change, this never does.
    var subject: SubjectClaim
    var audience: AudienceClaim
    var expires: ExpirationClaim
    var email: String?
    var emailVerified: BoolClaim?
    var name: String?

    func verify(using _: some JWTAlgorithm) throws {
        try expires.verifyNotExpired()
    }
}
