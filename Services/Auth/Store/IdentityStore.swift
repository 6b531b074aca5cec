import Foundation
import Postgres
import RPC

/// `auth.identities`: accounts of other providers (Google) linked to Aviary accounts, by the
/// provider's stable subject id, never by email alone.
struct IdentityStore: Sendable {
    let postgres: PostgresClient

    /// Who signed in with a provider, as that provider vouches.
    struct ExternalIdentity: Sendable {
        var provider: String
        var subject: String
        /// Verified by the provider.
        var email: String
        var fullname: String
        /// Where a username for a new account is derived from (the email's local part).
        var usernameSeed: String
    }

    /// The account of `identity`: the one already linked to it, else the one with its verified
    /// email (now linked), else a new one (`created`), with a free username derived from the seed.
    /// Runs in one transaction; a race with another sign-in of the same person is retried.
    ///
    /// An account found by email that no provider vouched for yet was registered with a password
    /// and an address Aviary never verified: anyone could have registered it with someone else's
    /// address, waiting for its owner to sign in with Google (account pre-hijacking). The provider
    /// now proves who owns the address, so the link removes the password and ends every session
    /// of the account; `announce` publishes the ended sessions before the transaction commits.
    ///
    /// An account found by email that is linked already (to another subject) is refused
    /// (`conflict`): email is no key of a person (an address given to someone new, a
    /// Google account deleted and made again), and linking it would hand the account over.
    func signIn(
        _ identity: ExternalIdentity, newUserID: @escaping @Sendable () -> Int64,
        announce: @escaping @Sendable ([Int64]) async throws -> Void
    ) async throws -> (user: UserRecord, created: Bool) {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await postgres.transaction { connection in
                    try await Self.signIn(identity, newUserID: newUserID, announce: announce, on: connection)
                }
            } catch let error as PostgresError where error.isUniqueViolation {
                // Not the caller's doing (no value of theirs is taken): sign-ins racing on.
                guard attempt < 4 else { throw RPCError.unavailable("this account is being signed in elsewhere right now; retry shortly") }
                continue
            }
        }
    }

    private static func signIn(
        _ identity: ExternalIdentity, newUserID: () -> Int64, announce: ([Int64]) async throws -> Void,
        on connection: PostgresConnection
    ) async throws -> (user: UserRecord, created: Bool) {
        let linked = try await connection.query(
            """
            SELECT \(Self.userColumns) FROM auth.identities i JOIN auth.users u ON u.id = i.user_id
            WHERE i.provider = $1 AND i.subject = $2
            """, [identity.provider, identity.subject])
        if let row = linked.first {
            var user = try UserRecord(row: row)
            try await markVerified(&user, vouching: identity.email, on: connection)
            return (user, false)
        }

        let byEmail = try await connection.query(
            "SELECT \(UserRecord.columns) FROM auth.users WHERE lower(email) = lower($1)", [identity.email])
        var user: UserRecord
        let created: Bool
        if let row = byEmail.first {
            user = try UserRecord(row: row)
            created = false
            let vouched = try await connection.query("SELECT 1 FROM auth.identities WHERE user_id = $1 LIMIT 1", [user.id])
            guard vouched.isEmpty else {
                throw RPCError.conflict(
                    "the Aviary account with this token's email is linked to another \(identity.provider) account: sign in with that one",
                    field: "idToken")
            }
            try await UserStore.setPasswordHash(nil, userID: user.id, on: connection)
            try await announce(try await SessionStore.revokeAll(userID: user.id, keeping: nil, on: connection))
        } else {
            let base = UsernameDerivation.base(from: identity.usernameSeed)
            let taken = Set(
                try await connection.query(
                    "SELECT username FROM auth.users WHERE username LIKE $1 AND username ~ $2",
                    [UsernameDerivation.likePattern(base), UsernameDerivation.variantsPattern(base)]
                ).map { try $0.decode(String.self, at: 0) })
            user = UserRecord(
                id: newUserID(), email: identity.email, username: UsernameDerivation.free(base: base, taken: taken),
                fullname: identity.fullname, bio: "", profileImageID: nil, createdAt: Date())
            try await UserStore.insert(user, passwordHash: nil, on: connection)
            created = true
        }
        try await connection.execute(
            "INSERT INTO auth.identities (provider, subject, user_id, email) VALUES ($1, $2, $3, $4)",
            [identity.provider, identity.subject, user.id, identity.email])
        try await markVerified(&user, vouching: identity.email, on: connection)
        return (user, created)
    }

    /// The provider vouches for `email`: the account's address, when it is that one, is verified
    /// from now on (an account whose address changed since it was linked keeps its own state).
    /// The user's columns, read through a join of identities (`i`) and users (`u`).
    private static let userColumns = qualifiedColumns(UserRecord.columns, by: "u")

    private static func markVerified(_ user: inout UserRecord, vouching email: String, on connection: PostgresConnection) async throws {
        guard !user.emailVerified, user.email.lowercased() == email.lowercased() else { return }
        try await connection.execute(
            "UPDATE auth.users SET email_verified_at = coalesce(email_verified_at, now()) WHERE id = $1", [user.id])
        user.emailVerified = true
    }
}

/// Usernames for accounts created by a sign-in with another provider.
enum UsernameDerivation {
    /// At most 11 characters of `[a-z0-9_]` from `seed`, padded to 3, never a reserved name, so that
    /// up to four digits can follow it within the 15-character limit.
    static func base(from seed: String) -> String {
        var base = String(
            seed.lowercased().unicodeScalars.filter { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
                .prefix(11).map(Character.init))
        if base.count < 3 { base = "user" + base }
        if AccountRules.isReserved(base) { base = String(("user_" + base).prefix(11)) }
        return base
    }

    /// `base` itself when free, else `base` followed by the lowest free number up to 9999. With all
    /// of those taken, five random digits after the base's first ten characters: a clash fails the
    /// insert, and the sign-in is tried again.
    static func free(base: String, taken: Set<String>) -> String {
        if !taken.contains(base) { return base }
        if let number = (1...9999).first(where: { !taken.contains(base + String($0)) }) { return base + String(number) }
        return String(base.prefix(10)) + String(Int.random(in: 10_000...99_999))
    }

    /// The usernames starting with `base` (`_` matches itself only, not any character).
    static func likePattern(_ base: String) -> String {
        base.replacingOccurrences(of: "_", with: "\\_") + "%"
    }

    /// `base` and its numbered variants: at most 10,000 names, whatever else starts with it.
    static func variantsPattern(_ base: String) -> String {
        "^\(base)[0-9]{0,4}$"
    }
}
