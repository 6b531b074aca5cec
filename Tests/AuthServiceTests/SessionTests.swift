import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import TestSupport
import Testing

/// Registration, sign-in, refresh and logout, against the real service.
@Suite struct SessionTests {
    @Test func registerLoginRefreshLogoutRoundTrip() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register(["bio": "hello"])
        #expect(account.signIn.user.email == account.email)
        #expect(account.signIn.user.isCurrentUser)
        #expect(account.signIn.user.bio == "hello")
        #expect(account.signIn.expiresAt > Date())
        #expect(try await auth.me(account.token).id == account.signIn.user.id)

        // By username, by email in any case; each sign-in is a new session.
        let byName = try await auth.login(account.username.uppercased(), account.password)
        let byEmail = try await auth.login(account.email.uppercased(), account.password)
        #expect(byName.user.id == account.signIn.user.id && byEmail.user.id == account.signIn.user.id)
        #expect(byName.refreshToken != byEmail.refreshToken)

        let refreshed = try await auth.refresh(byName.refreshToken)
        #expect(refreshed.refreshToken != byName.refreshToken)
        #expect(try await auth.me(refreshed.accessToken).id == account.signIn.user.id)

        _ = try await auth.call("auth.logout", token: refreshed.accessToken)
        await expectRPCError(Code.unauthenticated) { _ = try await auth.me(refreshed.accessToken) }
        await expectRPCError(Code.unauthenticated) { _ = try await auth.refresh(refreshed.refreshToken) }
        // Other sessions are untouched.
        #expect(try await auth.me(byEmail.accessToken).id == account.signIn.user.id)
        #expect(try await auth.me(account.token).id == account.signIn.user.id)
    }

    @Test func wrongPasswordAndUnknownLoginGetTheSameAnswerAndWork() async throws {
        // An instance of its own, so that its password-check count moves only with these calls.
        let instance = try await AuthStack.start(["AVIARY_SOCIAL_GRAPH_ADDRESSES": "127.0.0.1:\(try freePort())"])
        defer { instance.process.kill() }
        let auth = instance.api
        let account = try await auth.register()
        let before = try passwordChecks(instance)
        var messages: Set<String> = []
        for _ in 0..<3 {
            let wrong = await expectRPCError(Code.unauthenticated) { _ = try await auth.login(account.username, "not the password") }
            let unknown = await expectRPCError(Code.unauthenticated) { _ = try await auth.login(Unique.username(), "not the password") }
            messages.formUnion([wrong?.message, unknown?.message].compactMap { $0 })
        }
        #expect(messages.count == 1)
        // Every attempt checked an Argon2id hash, a real one or the dummy: the same work either way.
        #expect(try passwordChecks(instance) - before == 6)
    }

    @Test func aFailedSignInLeavesNoSessionBehind() async throws {
        // A sign-in starts its session while the password is checked; a wrong password must not keep it.
        let instance = try await AuthStack.shared.main()
        let account = try await instance.api.register()
        let postgres = try instance.database()
        defer { Task { await postgres.shutdown() } }
        func sessions() async throws -> Int64 {
            try await postgres.query("SELECT count(*) FROM auth.sessions WHERE user_id = $1", [Int64(account.id)!])[0]
                .decode(Int64.self, at: 0)
        }
        for attempt in 0..<5 {
            await expectRPCError(Code.unauthenticated) { _ = try await instance.api.login(account.username, "wrong \(attempt)") }
        }
        #expect(try await eventually { try await sessions() == 1 }, "the registration's session only")
        let signIn = try await instance.api.login(account.email, account.password)
        #expect(try await sessions() == 2)
        #expect(try await instance.api.refresh(signIn.refreshToken).refreshToken != signIn.refreshToken)
    }

    /// A refresh token unused for 30 days, or presented a year after the sign-in, ends its session
    /// (its access token too); sessions ended 30 days ago are deleted with their spent tokens.
    @Test func sessionsExpireAndEndedOnesAreDeleted() async throws {
        let instance = try await AuthStack.shared.main()
        let postgres = try instance.database()
        defer { Task { await postgres.shutdown() } }
        let (idle, old, ended, recent) = (
            try await instance.api.register(), try await instance.api.register(), try await instance.api.register(),
            try await instance.api.register()
        )
        func age(_ account: Account, _ column: String, days: Int) async throws {
            try await postgres.execute(
                "UPDATE auth.sessions SET \(column) = now() - make_interval(days => $2::int) WHERE user_id = $1",
                [Int64(account.id)!, Int64(days)])
        }
        try await age(idle, "last_used_at", days: 31)
        try await age(old, "created_at", days: 366)
        for account in [idle, old] {
            let refused = await expectRPCError(Code.unauthenticated) { _ = try await instance.api.refresh(account.signIn.refreshToken) }
            #expect(refused?.message.contains("expired") == true)
            await expectRPCError(Code.unauthenticated) { _ = try await instance.api.me(account.signIn.accessToken) }
        }
        // Within the limits a session goes on.
        try await age(recent, "last_used_at", days: 29)
        #expect(try await instance.api.refresh(recent.signIn.refreshToken).refreshToken != recent.signIn.refreshToken)

        _ = try await instance.api.call("auth.logout", token: ended.signIn.accessToken)
        try await age(ended, "revoked_at", days: 31)
        func sessions(of account: Account) async throws -> Int64 {
            try await postgres.query("SELECT count(*) FROM auth.sessions WHERE user_id = $1", [Int64(account.id)!])[0]
                .decode(Int64.self, at: 0)
        }
        #expect(try await eventually { try await sessions(of: ended) == 0 })
        #expect(try await sessions(of: recent) == 1, "in use")
        #expect(try await sessions(of: idle) == 1, "expired a moment ago: kept a while")
    }

    /// Refresh tokens spent more than 30 days ago are deleted, so a session refreshed every few
    /// minutes for a year does not keep every token it spent; one presented again then is unknown.
    @Test func refreshTokensSpentLongAgoAreDeleted() async throws {
        let instance = try await AuthStack.shared.main()
        let postgres = try instance.database()
        defer { Task { await postgres.shutdown() } }
        let account = try await instance.api.register()
        let first = try await instance.api.refresh(account.signIn.refreshToken)
        let second = try await instance.api.refresh(first.refreshToken)
        let session = "SELECT session_id FROM auth.spent_refresh_tokens WHERE session_id IN (SELECT id FROM auth.sessions WHERE user_id = $1)"
        func spent() async throws -> Int { try await postgres.query(session, [Int64(account.id)!]).count }
        #expect(try await spent() == 2)
        // The sign-in's token was spent 31 days ago; the next one a moment ago.
        try await postgres.execute(
            """
            UPDATE auth.spent_refresh_tokens SET spent_at = now() - interval '31 days'
            WHERE spent_at = (SELECT min(spent_at) FROM auth.spent_refresh_tokens WHERE session_id IN (\(session)))
            """, [Int64(account.id)!])
        #expect(try await eventually { try await spent() == 1 })
        // The forgotten one is refused as unknown; the session goes on.
        let refused = await expectRPCError(Code.unauthenticated) { _ = try await instance.api.refresh(account.signIn.refreshToken) }
        #expect(refused?.message.contains("already used") == false)
        #expect(try await instance.api.me(second.accessToken).id == account.signIn.user.id)
    }

    /// How many password verifications the instance has run (`auth_password_hash_seconds` on /metrics).
    private func passwordChecks(_ instance: AuthInstance) throws -> Int {
        let metrics = try AdminHTTP.get("/metrics", port: instance.process.adminPort).body
        let line = metrics.split(separator: "\n").first {
            $0.hasPrefix("auth_password_hash_seconds_count") && $0.contains(#"operation="verify""#)
        }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Int(Double($0) ?? -1) } ?? 0
    }

    @Test func reusingASpentRefreshTokenEndsTheSession() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register()
        let first = try await auth.refresh(account.signIn.refreshToken)
        let second = try await auth.refresh(first.refreshToken)
        #expect(try await auth.me(second.accessToken).id == account.signIn.user.id)

        // A copy of the first spent token comes back: the session ends for every holder.
        let error = await expectRPCError(Code.unauthenticated) { _ = try await auth.refresh(first.refreshToken) }
        #expect(error?.message.contains("already used") == true)
        await expectRPCError(Code.unauthenticated) { _ = try await auth.refresh(second.refreshToken) }
        await expectRPCError(Code.unauthenticated) { _ = try await auth.me(second.accessToken) }
        await expectRPCError(Code.unauthenticated) { _ = try await auth.me(account.token) }
    }

    @Test func concurrentRefreshesOfOneTokenLetOnlyOneThrough() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register()
        async let one = try? auth.refresh(account.signIn.refreshToken)
        async let two = try? auth.refresh(account.signIn.refreshToken)
        let outcomes = await [one, two]
        // The session row is locked: one call rotates the token, the other finds it spent.
        #expect(outcomes.compactMap { $0 }.count == 1)
    }

    @Test func malformedAndUnknownRefreshTokensAreRefused() async throws {
        let auth = try await AuthStack.shared.main().api
        for token in ["", "short", String(repeating: "A", count: 43), String(repeating: "*", count: 43)] {
            await expectRPCError(Code.unauthenticated) { _ = try await auth.refresh(token) }
        }
    }

    @Test func changePasswordEndsEveryOtherSession() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register()
        let other = try await auth.login(account.username, account.password)
        let current = try await auth.login(account.username, account.password)

        await expectRPCError(Code.validation, field: "currentPassword") {
            _ = try await auth.call(
                "auth.changePassword", ["currentPassword": "wrong password", "newPassword": "a new password 1"],
                token: current.accessToken)
        }
        await expectRPCError(Code.validation, field: "newPassword") {
            _ = try await auth.call(
                "auth.changePassword", ["currentPassword": .string(account.password), "newPassword": "short"],
                token: current.accessToken)
        }
        let result = try await auth.call(
            "auth.changePassword", ["currentPassword": .string(account.password), "newPassword": "a new password 1"],
            token: current.accessToken)
        #expect(result["endedSessions"] == 2)

        await expectRPCError(Code.unauthenticated) { _ = try await auth.me(account.token) }
        await expectRPCError(Code.unauthenticated) { _ = try await auth.me(other.accessToken) }
        await expectRPCError(Code.unauthenticated) { _ = try await auth.refresh(other.refreshToken) }
        #expect(try await auth.me(current.accessToken).id == account.signIn.user.id)
        _ = try await auth.refresh(current.refreshToken)

        await expectRPCError(Code.unauthenticated) { _ = try await auth.login(account.username, account.password) }
        _ = try await auth.login(account.username, "a new password 1")
    }
}
