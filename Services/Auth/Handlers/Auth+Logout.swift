import AuthTokens
import RPC
import ServiceKit

extension AuthService {
    func logout(_: Empty, context: RPCContext) async throws -> Empty {
        guard let principal = context.principal else { throw RPCError.unauthenticated() }
        try await sessions.revoke(sessionID: principal.sessionID, userID: principal.userID)
        // Other services check this, so the access token stops working everywhere now, not at its expiry.
        try await resources.sessionRevocations.revoke(sessionIDs: [principal.sessionID])
        return Empty()
    }
}
