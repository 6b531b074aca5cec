import AuthTokens
import AviaryAPI
import Crypto
import Foundation
import JWTKit
import Logging
import Redis
import RPC
import Testing
import TestSupport

/// Every kind of bad access token is refused with -32001 on `auth.me`.
@Suite struct TokenRefusalTests {
    private func signingKeys() throws -> TokenKeys {
        try TokenKeys(signingSeed: AuthStack.signingSeed)
    }

    private func claims(of account: Account) throws -> AccessTokenClaims {
        let parts = account.token.split(separator: ".")
        return try JSONDecoder().decode(AccessTokenClaims.self, from: base64URLDecoded(String(parts[1])))
    }

    @Test func missingAndGarbageTokensAreRefused() async throws {
        let auth = try await AuthStack.shared.main().api
        await expectRPCError(Code.unauthenticated) { _ = try await auth.call("auth.me") }
        for token in ["", "garbage", "a.b.c", String(repeating: "x", count: 5000)] {
            await expectRPCError(Code.unauthenticated) { _ = try await auth.me(token) }
        }
    }

    @Test func forgedTokenIsRefused() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register()
        let claims = try claims(of: account)
        // Signed by another Ed25519 key under the real key's id.
        let realKeyID = try signingKeys().signingKeyID!
        let forger = await JWTKeyCollection().add(
            eddsa: EdDSA.PrivateKey(backing: Curve25519.Signing.PrivateKey()), kid: JWKIdentifier(string: realKeyID))
        let forged = try await forger.sign(claims, kid: JWKIdentifier(string: realKeyID))
        await expectRPCError(Code.unauthenticated) { _ = try await auth.me(forged) }
    }

    @Test func expiredTokenIsRefused() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register()
        let claims = try claims(of: account)
        let issuer = try await AccessTokenIssuer(keys: try signingKeys(), lifetime: .seconds(60))
        let expired = try await issuer.issue(
            userID: Int64(claims.sub.value)!, sessionID: Int64(claims.sid)!, now: Date().addingTimeInterval(-3600))
        let error = await expectRPCError(Code.unauthenticated) { _ = try await auth.me(expired.token) }
        #expect(error?.message.contains("expired") == true)
        // The same claims, freshly signed, work: only the expiry was wrong.
        let fresh = try await issuer.issue(userID: Int64(claims.sub.value)!, sessionID: Int64(claims.sid)!)
        #expect(try await auth.me(fresh.token).id == account.signIn.user.id)
    }

    @Test func tamperedTokenIsRefused() async throws {
        let auth = try await AuthStack.shared.main().api
        let victim = try await auth.register()
        let attacker = try await auth.register()
        // The attacker's own token with the victim's id put in the payload; signature kept.
        var claims = try claims(of: attacker)
        claims.sub = SubjectClaim(value: victim.id)
        let parts = attacker.token.split(separator: ".")
        let payload = base64URLEncoded(try JSONEncoder().encode(claims))
        let tampered = "\(parts[0]).\(payload).\(parts[2])"
        await expectRPCError(Code.unauthenticated) { _ = try await auth.me(tampered) }
        #expect(try await auth.me(attacker.token).id == attacker.signIn.user.id)
    }

    @Test func unsignedAlgNoneTokenIsRefused() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register()
        let parts = account.token.split(separator: ".")
        let header = base64URLEncoded(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        for token in ["\(header).\(parts[1]).", "\(header).\(parts[1]).\(parts[2])"] {
            await expectRPCError(Code.unauthenticated) { _ = try await auth.me(token) }
        }
    }

    @Test func revokedTokenIsRefused() async throws {
        let auth = try await AuthStack.shared.main().api
        let account = try await auth.register()
        #expect(try await auth.me(account.token).id == account.signIn.user.id)  // verified once, so cached
        _ = try await auth.call("auth.logout", token: account.token)
        let error = await expectRPCError(Code.unauthenticated) { _ = try await auth.me(account.token) }
        #expect(error?.message.contains("session has ended") == true)
        await expectRPCError(Code.unauthenticated) { _ = try await auth.call("auth.logout", token: account.token) }
    }

    @Test("a revoked token stays refused after Redis loses the set of revoked sessions: auth puts it back")
    func revocationsComeBackAfterRedisLosesThem() async throws {
        // An instance with a Redis database of its own, whose set only it restores.
        let instance = try await AuthStack.start(["AVIARY_SOCIAL_GRAPH_ADDRESSES": "127.0.0.1:\(try freePort())"], redisDatabase: 9)
        defer { instance.process.kill() }
        let redis = RedisClient(
            configuration: try RedisConfiguration(url: try await TestServers.redis().url + "/9", poolSize: 1),
            logger: Logger(label: "auth-tests"))
        // Another process's view of the set, without a watch: each check asks Redis.
        let revocations = SessionRevocations(redis: redis, tokenLifetime: .seconds(900))
        #expect(try await eventually { try await revocations.isWhole() }, "auth puts the set together when it starts")
        let account = try await instance.api.register()
        let sessionID = try #require(Int64(try claims(of: account).sid))
        _ = try await instance.api.call("auth.logout", token: account.token)
        #expect(try await revocations.isRevoked(sessionID: sessionID))

        // Redis loses the set (restarted empty, or flushed): within a second auth restores it from
        // its sessions, and the token is refused again by a process that asks Redis.
        _ = try await redis.send(["DEL", "aviary:revoked-sessions"])
        #expect(try await !revocations.isRevoked(sessionID: sessionID))
        #expect(try await eventually { try await revocations.isWhole() })
        #expect(try await revocations.isRevoked(sessionID: sessionID))
        await expectRPCError(Code.unauthenticated) { _ = try await instance.api.me(account.token) }
        await redis.shutdown()
    }
}

func base64URLEncoded(_ data: Data) -> String {
    data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

func base64URLDecoded(_ text: String) -> Data {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
    return Data(base64Encoded: base64) ?? Data()
}
