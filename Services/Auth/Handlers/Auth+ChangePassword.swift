import AuthTokens
import AviaryAPI
import RPC
import ServiceKit

extension AuthService {
    func changePassword(_ params: ChangePasswordParams, context: RPCContext) async throws -> ChangePasswordResult {
        guard let principal = context.principal else { throw RPCError.unauthenticated() }
        let newPassword = try AccountRules.password(params.newPassword, field: "newPassword")
        try await limits.checkPasswordProof(userID: principal.userID)
        guard let stored = try await users.passwordHash(userID: principal.userID) else {
            throw RPCError.validation(
                "this account signs in with Google and has no password to change", field: "currentPassword")
        }
        guard params.currentPassword.unicodeScalars.count <= AccountRules.passwordLength.upperBound,
            try await passwords.verify(params.currentPassword, against: stored)
        else {
            throw RPCError.validation("currentPassword is not this account's password", field: "currentPassword")
        }
        let ended = try await users.replacePassword(
            with: try await passwords.hash(newPassword), userID: principal.userID, keeping: principal.sessionID,
            announce: resources.sessionRevocations.revoke(sessionIDs:))
        return ChangePasswordResult(endedSessions: ended.count)
    }
}
