import Foundation
import JWTKit
import Logging
import RPC
import ServiceKit

/// Checks Google ID tokens for `auth.loginWithGoogle`: an RS256 signature by one of Google's keys,
/// the configured issuer and audience (this application's OAuth client id), not expired, and a
/// verified email.
///
/// Configured by `AVIARY_GOOGLE_CLIENT_ID` (required to enable Google sign-in),
/// `AVIARY_GOOGLE_ISSUER` (default `https://accounts.google.com`), and the keys from
/// `AVIARY_GOOGLE_JWKS_FILE` or else `AVIARY_GOOGLE_JWKS_URL` (default Google's own), fetched with
/// a timeout of `AVIARY_GOOGLE_JWKS_TIMEOUT_MS` (default 5,000).
struct GoogleIDTokenVerifier: Sendable {
    private let clientID: String
    private let issuers: Set<String>
    private let keySet: GoogleKeySet

    /// Nil when Google sign-in is not configured.
    init?(configuration: ServiceConfiguration, logger: Logger) throws {
        guard let clientID = configuration.value("AVIARY_GOOGLE_CLIENT_ID") else { return nil }
        let issuer = configuration.value("AVIARY_GOOGLE_ISSUER") ?? "https://accounts.google.com"
        let source: GoogleKeySet.Source
        if let path = configuration.value("AVIARY_GOOGLE_JWKS_FILE") {
            source = .file(path)
        } else {
            let text = configuration.value("AVIARY_GOOGLE_JWKS_URL") ?? "https://www.googleapis.com/oauth2/v3/certs"
            guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http" else {
                throw ConfigurationError(
                    variable: "AVIARY_GOOGLE_JWKS_URL", message: "AVIARY_GOOGLE_JWKS_URL must be an http(s) URL, got '\(text)'")
            }
            source = .url(url)
        }
        let timeout = try configuration.integer("AVIARY_GOOGLE_JWKS_TIMEOUT_MS", default: 5000, in: 100...60_000)
        self.clientID = clientID
        // Google writes its issuer with and without the scheme; both name the same issuer.
        var issuers: Set<String> = [issuer]
        if issuer == "https://accounts.google.com" { issuers.insert("accounts.google.com") }
        self.issuers = issuers
        self.keySet = GoogleKeySet(source: source, timeout: .milliseconds(timeout), logger: logger)
    }

    /// The token's claims once every check passed; `unauthenticated` naming the check that failed,
    /// `forbidden` when Google has not verified the email.
    func verify(_ idToken: String) async throws(RPCError) -> GoogleIDTokenClaims {
        guard idToken.utf8.count <= 16 * 1024, let header = Self.header(of: idToken) else {
            throw RPCError.unauthenticated("idToken is not a JSON Web Token")
        }
        guard header.alg == "RS256" else { throw RPCError.unauthenticated("the ID token must be signed with RS256") }
        guard let keyID = header.kid else { throw RPCError.unauthenticated("the ID token names no signing key (kid)") }
        let keys = try await keySet.keys(containing: keyID)
        let claims: GoogleIDTokenClaims
        do {
            claims = try await keys.verify(idToken, as: GoogleIDTokenClaims.self)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            throw RPCError.unauthenticated("the ID token has expired")
        } catch {
            throw RPCError.unauthenticated("the ID token's signature is not valid")
        }
        guard issuers.contains(claims.issuer.value) else {
            throw RPCError.unauthenticated("the ID token was not issued by Google")
        }
        guard claims.audience.value.contains(clientID) else {
            throw RPCError.unauthenticated("the ID token was issued for another application")
        }
        guard !claims.subject.value.isEmpty, claims.subject.value.utf8.count <= 255 else {
            throw RPCError.unauthenticated("the ID token names no account")
        }
        guard let email = claims.email, !email.isEmpty, claims.emailVerified?.value == true else {
            throw RPCError.forbidden("Google has not verified this account's email address; verify it with Google first")
        }
        return claims
    }

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
    }

    private static func header(of token: String) -> Header? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[0].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else { return nil }
        return try? JSONDecoder().decode(Header.self, from: data)
    }
}
