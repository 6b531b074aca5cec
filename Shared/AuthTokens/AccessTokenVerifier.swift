import Foundation
import JWTKit
import Locking
import Logging
import RPC

/// Verifies access tokens locally, without a call to auth: signature (Ed25519, `alg` must be
/// EdDSA), issuer and expiry, then the session's revocation in one Redis lookup. Verified
/// signatures are remembered until the token expires, so a busy client costs one hash-table
/// lookup per call instead of a signature check.
public final class AccessTokenVerifier: Sendable {
    private let keys: JWTKeyCollection
    private let revocations: SessionRevocations?
    private let cache = Locked<[String: (principal: RPCPrincipal, expiresAt: Date)]>([:])
    private let cacheLimit: Int
    private let logger: Logger?

    /// - Parameters:
    ///   - revocations: nil only in tools and benchmarks that have no Redis.
    ///   - logger: where the cause of a revocation check that failed is told.
    public init(keys: TokenKeys, revocations: SessionRevocations?, cacheLimit: Int = 100_000, logger: Logger? = nil) async {
        let collection = JWTKeyCollection()
        for (keyID, key) in keys.publicKeys {
            await collection.add(eddsa: EdDSA.PublicKey(backing: key), kid: JWKIdentifier(string: keyID))
        }
        self.keys = collection
        self.revocations = revocations
        self.cacheLimit = cacheLimit
        self.logger = logger
    }

    public func verify(_ token: String) async throws(RPCError) -> RPCPrincipal {
        let principal = try await verifySignature(token)
        if let revocations {
            let revoked: Bool
            do {
                revoked = try await revocations.isRevoked(sessionID: principal.sessionID)
            } catch {
                logger?.warning("a session's revocation could not be checked", metadata: ["error": "\(String(reflecting: error))"])
                throw RPCError.unavailable("cannot check the session right now; retry shortly")
            }
            if revoked { throw RPCError.unauthenticated("the session has ended; sign in again") }
        }
        return principal
    }

    /// The signature and claims check alone (cached).
    private func verifySignature(_ token: String) async throws(RPCError) -> RPCPrincipal {
        let now = Date()
        if let cached = cache.withLock({ $0[token] }) {
            guard cached.expiresAt > now else { throw RPCError.unauthenticated("the access token has expired") }
            return cached.principal
        }
        guard token.utf8.count < 4096 else { throw RPCError.unauthenticated("the access token is not valid") }
        let claims: AccessTokenClaims
        do {
            claims = try await keys.verify(token, as: AccessTokenClaims.self)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            throw RPCError.unauthenticated("the access token has expired")
        } catch {
            throw RPCError.unauthenticated("the access token is not valid")
        }
        guard let userID = Int64(claims.sub.value), let sessionID = Int64(claims.sid) else {
            throw RPCError.unauthenticated("the access token is not valid")
        }
        let principal = RPCPrincipal(userID: userID, sessionID: sessionID)
        cache.withLock { cache in
            if cache.count >= cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[token] = (principal, claims.exp.value)
        }
        return principal
    }
}
