import AuthTokens
import AviaryAPI
import RPC
import ServiceKit

extension AuthService {
    func changePassword(_ params: ChangePasswordParams, context: RPCContext) async throws -> ChangePasswordResult {
        guard let principal = context.principal else { throw RPCError.unauthenticated() }
        let newPassword = try AccountRules.password(params.newPassword, field: "newPassword")
        try await requirePassword(params.currentPassword, of: principal.userID, field: "currentPassword", to: "change")
        let ended = try await users.replacePassword(
            with: try await passwords.hash(newPassword), userID: principal.userID, keeping: principal.sessionID,
            announce: resources.sessionRevocations.revoke(sessionIDs:))
        return ChangePasswordResult(endedSessions: ended.count)
    }

    func deleteAccount(_ params: DeleteAccountParams, context: RPCContext) async throws -> DeleteResult {
        let caller = try context.requireUser()
        try await requirePassword(params.password, of: caller, field: "password", to: "confirm the deletion with")
        _ = try await users.delete(userID: caller, announce: resources.sessionRevocations.revoke(sessionIDs:))
        return DeleteResult(deleted: true)
    }

    /// Checks that `password` is `userID`'s, as a signed-in user proves it (limited like signing in).
    private func requirePassword(_ password: String, of userID: Int64, field: String, to purpose: String) async throws {
        try await limits.checkPasswordProof(userID: userID)
        guard let stored = try await users.passwordHash(userID: userID) else {
            throw RPCError.validation(
                "this account signs in with Google and has no password to \(purpose); set one with auth.requestPasswordReset",
                field: field)
        }
        guard password.unicodeScalars.count <= AccountRules.passwordLength.upperBound,
            try await passwords.verify(password, against: stored)
        else {
            throw RPCError.validation("\(field) is not this account's password", field: field)
        }
    }
}
