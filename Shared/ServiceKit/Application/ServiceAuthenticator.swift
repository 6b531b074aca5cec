import Crypto
import Foundation
import RPC

/// Verifies what callers present: the service credential (compared in constant time) and, once a
/// token verifier is installed, users' access tokens.
public struct ServiceAuthenticator: RPCAuthenticator {
    /// Checks an access token and returns whose it is.
    public typealias TokenVerifier = @Sendable (String) async throws(RPCError) -> RPCPrincipal

    private let credentialDigest: SHA256.Digest
    private let verifyToken: TokenVerifier?

    public init(serviceCredential: String, verifyToken: TokenVerifier? = nil) {
        self.credentialDigest = SHA256.hash(data: Data(serviceCredential.utf8))
        self.verifyToken = verifyToken
    }

    public func authenticate(token: String) async throws(RPCError) -> RPCPrincipal {
        guard let verifyToken else { throw .unauthenticated("this service does not accept access tokens yet") }
        return try await verifyToken(token)
    }

    /// Compares digests, so the time taken says nothing about how much of the credential matched.
    public func isServiceCredential(_ credential: String) -> Bool {
        SHA256.hash(data: Data(credential.utf8)) == credentialDigest
    }
}
