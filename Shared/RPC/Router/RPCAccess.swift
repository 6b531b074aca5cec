/// Who may call a method.
public enum RPCAccess: String, Sendable, Codable {
    /// Anyone; a token, if present, is verified and fills `principal`.
    case anonymous
    /// A user with a valid access token.
    case user
    /// Another service, proven by `_meta.service`.
    case `internal`
}

/// Verifies credentials for the router. The service runtime supplies one that checks access tokens
/// locally and the service credential in constant time.
public protocol RPCAuthenticator: Sendable {
    /// The principal of a valid token; throws `unauthenticated` for a forged, expired or revoked one.
    func authenticate(token: String) async throws(RPCError) -> RPCPrincipal
    /// Whether `credential` is the service credential.
    func isServiceCredential(_ credential: String) -> Bool
}
