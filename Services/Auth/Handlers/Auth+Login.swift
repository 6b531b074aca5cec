import AviaryAPI
import Logging
import RPC

extension AuthService {
    func login(_ params: LoginParams, context: RPCContext) async throws -> AuthResult {
        let login = params.login.trimmingWhitespace()
        guard !login.isEmpty, login.unicodeScalars.count <= AccountRules.emailLimit,
            !login.unicodeScalars.contains(where: { $0.value == 0 })
        else {
            throw RPCError.validation(
                "login must be an email address or a username, at most \(AccountRules.emailLimit) characters", field: "login")
        }
        guard (1...AccountRules.passwordLength.upperBound).contains(params.password.unicodeScalars.count) else {
            throw RPCError.validation(
                "password must be 1 to \(AccountRules.passwordLength.upperBound) characters", field: "password")
        }
        // The address limit and the account lookup are independent: one round trip's wait, not two.
        async let addressAllowed: Void = limits.checkLogin(address: context.clientAddress)
        async let lookup = users.credentials(login: login)
        try await addressAllowed
        let credentials = try await lookup
        // A login that names no account (or one without a password) is checked against a dummy hash,
        // so that the answer takes as long as for a real account and tells nothing about which exist.
        // While the hash runs: the account limit and then, for an account that exists, its new
        // session (the row written and the access token signed), and the profile the answer
        // carries. Only the answer waits for the hash. Nothing is written for a login the limit
        // refuses, and a session started for a wrong password, never handed out, is deleted.
        let stored = credentials?.passwordHash
        let user = credentials?.user
        async let admitted = admit(user, login: login)
        async let checked = passwords.verify(params.password, against: stored ?? dummyHash)
        async let profile = ownProfile(user, context: context)
        let session = try await admitted
        let matches: Bool
        do {
            matches = try await checked
        } catch {
            discard(session, context: context)
            throw error
        }
        guard matches, let user, let stored else {
            discard(session, context: context)
            throw RPCError.unauthenticated("the login or the password is wrong")
        }
        // Told only to whoever knows the password: an account's session is missing when it is suspended.
        guard let session, user.suspension == nil else {
            discard(session, context: context)
            throw Self.refusal(user.suspension)
        }
        if passwords.needsRehash(stored) {
            try await users.setPasswordHash(try await passwords.hash(params.password), userID: user.id)
            context.logger.info("upgraded a password hash to the current Argon2id parameters", metadata: ["user.id": "\(user.id)"])
        }
        let own: User
        if let read = await profile { own = read } else { own = await profiles.user(user, viewer: user.id, context: context) }
        return AuthResult(user: own, tokens: session)
    }

    /// Waits for the login's limit, then starts `user`'s session; nil without a user, or when the
    /// account is suspended.
    private func admit(_ user: UserRecord?, login: String) async throws -> IssuedTokens? {
        try await limits.checkLogin(login: login)
        guard let user, user.suspension == nil else { return nil }
        return try await issuer.start(userID: user.id)
    }

    /// Deletes a session a failed sign-in started, without waiting: the answer to a wrong password
    /// takes no longer for an account that exists than for one that does not.
    private func discard(_ session: IssuedTokens?, context: RPCContext) {
        guard let session else { return }
        let (issuer, logger) = (issuer, context.logger)
        Task {
            do {
                try await issuer.discard(session)
            } catch {
                logger.warning(
                    "could not delete the session of a failed sign-in; it was never handed out",
                    metadata: ["session.id": "\(session.sessionID)", "error": "\(error)"])
            }
        }
    }

    /// `user`'s profile as they see it themselves; nil without a user.
    private func ownProfile(_ user: UserRecord?, context: RPCContext) async -> User? {
        guard let user else { return nil }
        return await profiles.user(user, viewer: user.id, context: context)
    }
}
