import Crypto
import Foundation
import RPC

/// Verifies what callers present: the service credential (compared in constant time) and, once a
/// token verifier is installed, users' access tokens.
public struct ServiceAuthenticator: RPCAuthenticator {
    /// Checks an access token and returns whose it is.
    public typealias TokenVerifier = @Sendable (String) async throws(RPCError) -> RPCPrincipal

    private let credentialDigests: [SHA256.Digest]
    private let verifyToken: TokenVerifier?

    /// - Parameter acceptedCredentials: every credential accepted on internal calls
    ///   (``ServiceResources/acceptedServiceCredentials``).
    public init(acceptedCredentials: [String], verifyToken: TokenVerifier? = nil) {
        self.credentialDigests = acceptedCredentials.map { SHA256.hash(data: Data($0.utf8)) }
        self.verifyToken = verifyToken
    }

    public func authenticate(token: String) async throws(RPCError) -> RPCPrincipal {
        guard let verifyToken else { throw .unauthenticated("this service does not accept access tokens yet") }
        return try await verifyToken(token)
    }

    /// Compares digests, so the time taken says nothing about how much of the credential matched;
    /// with every accepted one, so it says nothing about which matched either.
    public func isServiceCredential(_ credential: String) -> Bool {
        let digest = SHA256.hash(data: Data(credential.utf8))
        return credentialDigests.reduce(false) { matched, accepted in (accepted == digest) || matched }
    }
}
