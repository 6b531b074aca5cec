import AuthTokens
import AviaryAPI
import Logging
import RPC
import ServiceKit

extension AuthService {
    func refresh(_ params: RefreshParams, context: RPCContext) async throws -> TokenPair {
        guard let presented = RefreshToken.storedHash(of: params.refreshToken) else {
            throw RPCError.unauthenticated("the refresh token is not valid")
        }
        let next = RefreshToken.generate()
        switch try await sessions.rotate(presented: presented, next: next.hash) {
        case .rotated(let userID, let sessionID):
            let tokens = try await issuer.tokens(userID: userID, sessionID: sessionID, refreshToken: next)
            return TokenPair(accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, expiresAt: tokens.expiresAt)
        case .reused(let sessionID):
            try await resources.sessionRevocations.revoke(sessionIDs: [sessionID])
            context.logger.warning(
                "a spent refresh token was presented again; the session was ended", metadata: ["session.id": "\(sessionID)"])
            throw RPCError.unauthenticated("this refresh token was already used, so the session has been ended; sign in again")
        case .ended:
            throw RPCError.unauthenticated("the session has ended; sign in again")
        case .expired(let sessionID):
            // Its last access token may still be live (a session in use that reached its maximum age).
            try await resources.sessionRevocations.revoke(sessionIDs: [sessionID])
            throw RPCError.unauthenticated("the session has expired; sign in again")
        case .unknown:
            throw RPCError.unauthenticated("the refresh token is not valid")
        }
    }
}
