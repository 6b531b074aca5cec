import AuthTokens
import AviaryAPI
import RPC
import ServiceKit

extension AuthService {
    func requestEmailVerification(_ params: Empty, context: RPCContext) async throws -> MailRequested {
        let caller = try context.requireUser()
        try requireMail()
        guard let user = try await users.find(id: caller) else { throw RPCError.unauthenticated() }
        guard !user.emailVerified else { throw RPCError.conflict("this account's email is verified already") }
        try await limits.checkMail(key: "user:\(caller)")
        let token = RefreshToken.generate()
        _ = try await emailTokens.issue(
            .verify, token: token, to: .id(caller), mailID: resources.ids.next(), subject: "Verify your email on Aviary",
            body: """
                Hello @\(user.username),

                To confirm that this address is yours, give this code to the app (auth.verifyEmail), within 24 hours:

                \(token.token)

                If you did not ask for this, you can ignore this mail.
                """)
        return MailRequested(requested: true)
    }

    func verifyEmail(_ params: EmailTokenParams, context: RPCContext) async throws -> EmailVerified {
        try await limits.checkLogin(address: context.clientAddress)
        guard let hash = RefreshToken.storedHash(of: params.token), try await emailTokens.verify(hash) else {
            throw Self.badToken
        }
        return EmailVerified(emailVerified: true)
    }

    /// Answers alike whether or not an account has the address: the same statement runs either way
    /// (it writes the token and the mail only when it finds one), and the limits count the address
    /// typed, not the account.
    func requestPasswordReset(_ params: PasswordResetRequest, context: RPCContext) async throws -> MailRequested {
        let email = try AccountRules.email(params.email)
        try requireMail()
        try await limits.checkMail(address: context.clientAddress)
        try await limits.checkMail(key: "email:\(email.lowercased())")
        let token = RefreshToken.generate()
        _ = try await emailTokens.issue(
            .reset, token: token, to: .email(email), mailID: resources.ids.next(), subject: "Reset your Aviary password",
            body: """
                Hello,

                Someone, hopefully you, asked to reset the password of the Aviary account with this address. To \
                choose a new one, give this code to the app (auth.resetPassword), within the hour:

                \(token.token)

                If you did not ask for this, ignore this mail: your password stays as it is.
                """)
        return MailRequested(requested: true)
    }

    func resetPassword(_ params: PasswordReset, context: RPCContext) async throws -> ChangePasswordResult {
        try await limits.checkLogin(address: context.clientAddress)
        let newPassword = try AccountRules.password(params.newPassword, field: "newPassword")
        guard let hash = RefreshToken.storedHash(of: params.token) else { throw Self.badToken }
        let passwordHash = try await passwords.hash(newPassword)
        let ended = try await users.resetPassword(
            with: passwordHash, redeeming: hash, announce: resources.sessionRevocations.revoke(sessionIDs:))
        guard let ended else { throw Self.badToken }
        return ChangePasswordResult(endedSessions: ended.count)
    }

    /// A token that is not one this service sent, or was used, replaced or expired.
    static let badToken = RPCError.validation("token is not valid: it was used, replaced or has expired", field: "token")

    /// Refuses a request for mail where no SMTP server is configured.
    private func requireMail() throws(RPCError) {
        guard mail.smtp != nil else { throw RPCError.unavailable("this server sends no mail (AVIARY_SMTP_URL is not set)") }
    }
}
