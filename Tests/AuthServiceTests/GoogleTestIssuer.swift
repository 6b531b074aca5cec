import CryptoExtras
import Foundation
import JWTKit
import TestSupport

/// Plays Google for the tests: an RSA key pair made here, its public half written as a JWKS file
/// for the `main` instance (`AVIARY_GOOGLE_JWKS_FILE`), and ID tokens signed with it. A second key
/// that Google does not list signs the forgeries.
final class GoogleTestIssuer: Sendable {
    static let clientID = "aviary-tests.apps.googleusercontent.com"
    static let keyID = "test-google-key-1"
    private static let instance = Task { try await GoogleTestIssuer() }

    let jwksFile: String
    private let google: JWTKeyCollection
    private let attacker: JWTKeyCollection

    static func shared() async throws -> GoogleTestIssuer {
        try await instance.value
    }

    private init() async throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let primitives = try key.publicKey.getKeyPrimitives()
        let jwks: [String: Any] = [
            "keys": [
                [
                    "kty": "RSA", "use": "sig", "alg": "RS256", "kid": Self.keyID,
                    "n": Self.base64URL(primitives.modulus), "e": Self.base64URL(primitives.publicExponent),
                ]
            ]
        ]
        jwksFile = try temporaryFolderForThisRun("google-jwks") + "/jwks.json"
        try JSONSerialization.data(withJSONObject: jwks).write(to: URL(fileURLWithPath: jwksFile))
        google = await JWTKeyCollection().add(
            rsa: try Insecure.RSA.PrivateKey(backing: key), digestAlgorithm: .sha256, kid: JWKIdentifier(string: Self.keyID))
        attacker = await JWTKeyCollection().add(
            rsa: try Insecure.RSA.PrivateKey(backing: try _RSA.Signing.PrivateKey(keySize: .bits2048)),
            digestAlgorithm: .sha256, kid: JWKIdentifier(string: Self.keyID))
    }

    /// An ID token with these claims, signed by Google's key (or, `forged`, by a key Google does not list, under Google's key id).
    func idToken(_ claims: Claims, forged: Bool = false, keyID: String = GoogleTestIssuer.keyID) async throws -> String {
        try await (forged ? attacker : google).sign(claims, kid: JWKIdentifier(string: keyID))
    }

    /// The claims of a Google ID token, with valid defaults for a new person.
    struct Claims: JWTPayload {
        var iss = "https://accounts.google.com"
        var aud = GoogleTestIssuer.clientID
        var sub = String(UInt64.random(in: 1...UInt64.max))
        var email: String
        var email_verified = true
        var name: String? = "Google Person"
        var iat = Int(Date().timeIntervalSince1970)
        var exp = Int(Date().timeIntervalSince1970) + 3600

        func verify(using _: some JWTAlgorithm) throws {}
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
