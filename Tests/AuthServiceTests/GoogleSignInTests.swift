import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import TestSupport
import Testing

/// `auth.loginWithGoogle` with ID tokens signed by the test's own "Google" key.
@Suite struct GoogleSignInTests {
    private func signIn(_ auth: AuthAPI, _ token: String) async throws -> SignIn {
        try await auth.call("auth.loginWithGoogle", ["idToken": .string(token)], as: SignIn.self)
    }

    @Test func firstSignInCreatesTheAccountAndLaterOnesFindIt() async throws {
        let auth = try await AuthStack.shared.main().api
        let google = try await GoogleTestIssuer.shared()
        let local = "Grace.Hopper+" + Unique.word(6)
        let claims = GoogleTestIssuer.Claims(email: "\(local)@gmail.example", name: "Grace Hopper")
        let first = try await signIn(auth, try await google.idToken(claims))
        #expect(first.created == true)
        #expect(first.user.email == claims.email && first.user.fullname == "Grace Hopper")
        #expect(first.user.username.hasPrefix("gracehopper"))
        #expect(try await auth.me(first.accessToken).id == first.user.id)
        // Google vouches for the address.
        let firstMe = try await auth.me(first.accessToken)
        #expect(first.user.emailVerified == true && firstMe.emailVerified == true)

        let again = try await signIn(auth, try await google.idToken(claims))
        #expect(again.created == false && again.user.id == first.user.id)

        // A second person whose email derives the same username gets a free variant.
        let namesake = try await signIn(
            auth, try await google.idToken(GoogleTestIssuer.Claims(email: "\(local.lowercased())@other.example")))
        #expect(namesake.created == true && namesake.user.username != first.user.username)
        #expect(namesake.user.username.hasPrefix("gracehopper"))

        // Such an account has no password to sign in with.
        await expectRPCError(Code.unauthenticated) { _ = try await auth.login(first.user.username, "any password at all") }
    }

    /// Registering never verified the email, so whoever registered may not own it (they may be
    /// waiting for the owner to link the account: pre-hijacking). Google's proof of the address
    /// wins: the link removes the password and ends the registrant's sessions.
    @Test func linksToTheAccountWithTheSameEmailAndTakesItFromWhoeverRegisteredIt() async throws {
        let auth = try await AuthStack.shared.main().api
        let google = try await GoogleTestIssuer.shared()
        let account = try await auth.register()
        let otherSession = try await auth.login(account.username, account.password)
        #expect(try await auth.me(otherSession.accessToken).emailVerified == false)
        let claims = GoogleTestIssuer.Claims(email: account.email.uppercased())
        let result = try await signIn(auth, try await google.idToken(claims))
        #expect(result.created == false)
        #expect(result.user.id == account.signIn.user.id && result.user.username == account.username)
        #expect(try await auth.me(result.accessToken).id == result.user.id)
        let linkedMe = try await auth.me(result.accessToken)
        #expect(result.user.emailVerified == true && linkedMe.emailVerified == true)

        await expectRPCError(Code.unauthenticated) { _ = try await auth.login(account.email, account.password) }
        for tokens in [account.signIn, otherSession] {
            await expectRPCError(Code.unauthenticated) { _ = try await auth.me(tokens.accessToken) }
            await expectRPCError(Code.unauthenticated) { _ = try await auth.refresh(tokens.refreshToken) }
        }
        await expectRPCError(Code.validation, field: "currentPassword") {
            _ = try await auth.call(
                "auth.changePassword", ["currentPassword": .string(account.password), "newPassword": "a new password 1"],
                token: result.accessToken)
        }

        // Once linked, a later Google sign-in ends nothing.
        let again = try await signIn(auth, try await google.idToken(claims))
        #expect(again.user.id == result.user.id)
        #expect(try await auth.me(result.accessToken).id == result.user.id)
    }

    /// An address can pass to another Google account (a Workspace admin reassigns it, an account
    /// is deleted and made again): the other account is not the same person and gets nothing.
    @Test func anotherGoogleAccountWithTheSameEmailIsRefused() async throws {
        let auth = try await AuthStack.shared.main().api
        let google = try await GoogleTestIssuer.shared()
        let claims = GoogleTestIssuer.Claims(email: "owner.\(Unique.word(6))@corp.example")
        let owner = try await signIn(auth, try await google.idToken(claims))
        var successor = claims
        successor.sub = String(UInt64.random(in: 1...UInt64.max))
        for _ in 0..<2 {
            await expectRPCError(Code.conflict, field: "idToken") { _ = try await signIn(auth, try await google.idToken(successor)) }
        }
        // The owner keeps the account and the session.
        #expect(try await auth.me(owner.accessToken).id == owner.user.id)
        #expect(try await signIn(auth, try await google.idToken(claims)).user.id == owner.user.id)
    }

    /// A username derived from the email stays a valid username (at most 15 characters) when the
    /// base and its 9,999 numbered variants are all taken.
    @Test func aDerivedUsernameStaysValidWhenEveryNumberedVariantIsTaken() async throws {
        let instance = try await AuthStack.shared.main()
        let google = try await GoogleTestIssuer.shared()
        let base = "z_" + Unique.word(9)  // 11 characters, the longest base
        let database = try instance.database()
        try await database.execute(
            """
            INSERT INTO auth.users (id, email, username, fullname)
            SELECT (1::bigint << 60) + ($2::bigint << 14) + n, $1 || n || '@taken.example', $1 || CASE WHEN n = 0 THEN '' ELSE n::text END, 'taken'
            FROM generate_series(0, 9999) AS n
            """, [base, Int64.random(in: 0..<(1 << 40))])
        await database.shutdown()
        let result = try await signIn(instance.api, try await google.idToken(GoogleTestIssuer.Claims(email: "\(base)@gmail.example")))
        #expect(result.created == true && result.user.username.count <= 15 && result.user.username.hasPrefix(String(base.prefix(10))))
        #expect(result.user.username.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") })
    }

    @Test func refusesForgedMisaddressedExpiredAndUnverifiedTokens() async throws {
        let auth = try await AuthStack.shared.main().api
        let google = try await GoogleTestIssuer.shared()
        let email = "\(Unique.username())@gmail.example"
        let good = GoogleTestIssuer.Claims(email: email)

        let forged = try await google.idToken(good, forged: true)
        await expectRPCError(Code.unauthenticated) { _ = try await signIn(auth, forged) }

        var wrongAudience = good
        wrongAudience.aud = "another-app.apps.googleusercontent.com"
        let misaddressed = await expectRPCError(Code.unauthenticated) {
            _ = try await signIn(auth, try await google.idToken(wrongAudience))
        }
        #expect(misaddressed?.message.contains("another application") == true)

        var wrongIssuer = good
        wrongIssuer.iss = "https://accounts.evil.example"
        await expectRPCError(Code.unauthenticated) { _ = try await signIn(auth, try await google.idToken(wrongIssuer)) }

        var expired = good
        expired.exp = Int(Date().timeIntervalSince1970) - 600
        await expectRPCError(Code.unauthenticated) { _ = try await signIn(auth, try await google.idToken(expired)) }

        await expectRPCError(Code.unauthenticated) {
            _ = try await signIn(auth, try await google.idToken(good, keyID: "a-key-google-never-had"))
        }

        var unverified = good
        unverified.email_verified = false
        await expectRPCError(Code.forbidden) { _ = try await signIn(auth, try await google.idToken(unverified)) }

        await expectRPCError(Code.unauthenticated) { _ = try await signIn(auth, "not.a.token") }

        // None of those created the account; the good token still does.
        #expect(try await signIn(auth, try await google.idToken(good)).created == true)
    }

    /// Without a Google client id the method is not offered: not found (not an outage a client
    /// would retry, nor an error the service logs for every such call), and not in rpc.discover.
    @Test func isNotOfferedWhenNotConfigured() async throws {
        let (instance, _) = try await AuthStack.shared.withGraph()
        let google = try await GoogleTestIssuer.shared()
        let token = try await google.idToken(GoogleTestIssuer.Claims(email: "someone@gmail.example"))
        await expectRPCError(Code.methodNotFound) { _ = try await signIn(instance.api, token) }
        #expect(try await Self.discovered(instance.api).contains("auth.loginWithGoogle") == false)
        #expect(try await Self.discovered(try await AuthStack.shared.main().api).contains("auth.loginWithGoogle"))
    }

    private static func discovered(_ auth: AuthAPI) async throws -> [String] {
        struct Document: Decodable {
            struct Method: Decodable { var name: String }
            var methods: [Method]
        }
        return try await auth.call("rpc.discover", as: Document.self).methods.map(\.name)
    }
}

/// Google's keys fetched from a URL (here a local HTTP server), with a timeout.
@Suite struct GoogleKeysURLTests {
    @Test func fetchesKeysFromTheURLAndTimesOutOnAStalledOne() async throws {
        let google = try await GoogleTestIssuer.shared()
        let server = try await JWKSServer.start(serving: google.jwksFile)
        let instance = try await AuthStack.start([
            "AVIARY_SOCIAL_GRAPH_ADDRESSES": "127.0.0.1:\(try freePort())",
            "AVIARY_GOOGLE_CLIENT_ID": GoogleTestIssuer.clientID,
            "AVIARY_GOOGLE_JWKS_URL": "http://127.0.0.1:\(server.port)/oauth2/v3/certs",
            "AVIARY_GOOGLE_JWKS_TIMEOUT_MS": "2000",
        ])
        defer { instance.process.kill() }
        let token = try await google.idToken(GoogleTestIssuer.Claims(email: "\(Unique.username())@gmail.example"))

        server.stalled = true
        let started = ContinuousClock.now
        await expectRPCError(Code.unavailable) {
            _ = try await instance.api.call("auth.loginWithGoogle", ["idToken": .string(token)])
        }
        #expect(ContinuousClock.now - started < .seconds(8))

        server.stalled = false
        let result = try await instance.api.call("auth.loginWithGoogle", ["idToken": .string(token)], as: SignIn.self)
        #expect(result.created == true)
        #expect(server.requestCount >= 2)
    }
}
