import AviaryAPI
import Logging
import RPC

/// `auth.login` params.
struct LoginParams: Codable, Sendable {
    /// An email address or a username.
    var login: String
    var password: String
}

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
        async let addressAllowed: Void = limits.checkLogin(address: context.connection?.remoteAddress)
        async let lookup = users.credentials(login: login)
        try await addressAllowed
        let credentials = try await lookup
        // A login that names no account (or one without a password) is checked against a dummy hash,
        // so that the answer takes as long as for a real account and tells nothing about which exist.
        // The account limit, the password check and the profile the answer carries are independent:
        // one wait, not three. Nothing is answered before the limit's verdict, so a limited caller
        // learns nothing from the check; a wrong password costs one wasted profile lookup.
        let stored = credentials?.passwordHash
        async let accountAllowed: Void = limits.checkLogin(
            account: credentials.map { "user:\($0.user.id)" } ?? "login:\(login.lowercased())")
        async let checked = passwords.verify(params.password, against: stored ?? dummyHash)
        async let profile = ownProfile(credentials?.user, context: context)
        try await accountAllowed
        let matches = try await checked
        guard matches, let user = credentials?.user, let stored else {
            throw RPCError.unauthenticated("the login or the password is wrong")
        }
        if passwords.needsRehash(stored) {
            try await users.setPasswordHash(try await passwords.hash(params.password), userID: user.id)
            context.logger.info("upgraded a password hash to the current Argon2id parameters", metadata: ["user.id": "\(user.id)"])
        }
        // The session is recorded while the profile is still coming in: one wait, not two.
        async let tokens = issuer.start(userID: user.id)
        let own: User
        if let read = await profile { own = read } else { own = await profiles.user(user, viewer: user.id, context: context) }
        return AuthResult(user: own, tokens: try await tokens)
    }

    /// `user`'s profile as they see it themselves; nil without a user.
    private func ownProfile(_ user: UserRecord?, context: RPCContext) async -> User? {
        guard let user else { return nil }
        return await profiles.user(user, viewer: user.id, context: context)
    }
}
