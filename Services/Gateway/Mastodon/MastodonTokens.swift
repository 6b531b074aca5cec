import AviaryAPI
import AviaryJSON
import ChannelSupport
import Crypto
import Foundation
import Locking
import Postgres
import RPC
import ServiceKit

/// What a Mastodon token grants: its app, its user (nil for an app's own token), its scopes and
/// the Aviary access token its calls to the services carry.
struct MastodonGrant: Sendable {
    var appID: Int64
    var userID: Int64?
    var scopes: OAuthScopes
    var accessToken: String?
}

/// An app registered through `POST /api/v1/apps`.
struct MastodonApp: Sendable {
    var id: Int64
    var clientID: String
    var name: String
    var website: String?
    var redirectURIs: [String]
    var scopes: OAuthScopes
}

/// The Aviary session a sign-in started (`auth.login`), as the token store keeps it.
struct AviarySession: Sendable {
    var userID: Int64
    var accessToken: String
    var refreshToken: String
    var expiresAt: Date

    init(_ result: AuthResult) {
        userID = result.user.id.value
        accessToken = result.accessToken
        refreshToken = result.refreshToken
        expiresAt = result.expiresAt
    }

    init(userID: Int64, accessToken: String, refreshToken: String, expiresAt: Date) {
        self.userID = userID
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }
}

/// The Mastodon API's apps, tokens and authorization codes, in the gateway's tables.
///
/// A Mastodon token is an opaque random string standing for one Aviary session: Mastodon clients
/// keep a token until it is revoked and never refresh it, while Aviary's access tokens live 15
/// minutes. So the gateway keeps the session's refresh token and renews the access token itself,
/// shortly before it expires, one renewal at a time per token across every gateway instance (a row
/// lock): a refresh token presented twice would end the session. The Mastodon token then lives as
/// long as its session (idle and absolute limits, logout, password change: as today). Only SHA-256
/// digests of Mastodon tokens, refresh tokens, codes and client secrets are stored.
final class MastodonTokens: Sendable {
    private let postgres: PostgresClient
    private let forwarder: Forwarder
    /// Grants this process resolved lately, by token digest: a call costs no query while its
    /// entry is younger than ``recheck`` and its access token is not about to expire.
    private let cache = Locked<[String: (grant: MastodonGrant, expires: Date?, checked: Date)]>([:])

    /// Past this many cached grants, those due for a recheck are dropped when one is added.
    static let cacheSweepAbove = 10_000
    /// How long a resolved grant is believed without reading it again (a token revoked through
    /// another instance; a revoked session's access token is refused by the services at once).
    static let recheck: TimeInterval = 30
    /// An access token this close to its expiry is renewed first.
    static let renewal: TimeInterval = 60
    /// How long an authorization code may wait for its exchange.
    static let codeLifetime: TimeInterval = 600

    init(postgres: PostgresClient, forwarder: Forwarder) {
        self.postgres = postgres
        self.forwarder = forwarder
    }

    // MARK: Apps

    func registerApp(name: String, website: String?, redirectURIs: [String], scopes: OAuthScopes) async throws
        -> (app: MastodonApp, secret: String)
    {
        let clientID = Self.randomToken()
        let secret = Self.randomToken()
        let rows = try await postgres.query(
            """
            INSERT INTO gateway.mastodon_apps (client_id, secret_hash, name, website, redirect_uris, scopes)
            VALUES ($1, $2, $3, $4, $5, $6) RETURNING id
            """,
            [clientID, Self.digest(secret), name, website, redirectURIs.joined(separator: "\n"), scopes.text])
        let id = try rows.first?.decode(Int64.self, at: 0) ?? 0
        return (MastodonApp(id: id, clientID: clientID, name: name, website: website, redirectURIs: redirectURIs, scopes: scopes), secret)
    }

    /// The app of `clientID`; with `secret`, only when the secret is its own.
    func app(clientID: String, secret: String? = nil) async throws -> MastodonApp? {
        let rows = try await postgres.query(
            "SELECT id, secret_hash, name, website, redirect_uris, scopes FROM gateway.mastodon_apps WHERE client_id = $1",
            [clientID])
        guard let row = rows.first else { return nil }
        if let secret, try row.decode(String.self, at: 1) != Self.digest(secret) { return nil }
        guard case .success(let scopes) = OAuthScopes.parse(try row.decode(String.self, at: 5)) else { return nil }
        return MastodonApp(
            id: try row.decode(Int64.self, at: 0), clientID: clientID, name: try row.decode(String.self, at: 2),
            website: try row.decode(String?.self, at: 3),
            redirectURIs: try row.decode(String.self, at: 4).split(separator: "\n").map(String.init), scopes: scopes)
    }

    // MARK: Tokens

    /// A new Mastodon token (and refresh token, with a session) of the app `appID` for
    /// `session`'s user, or the app's own token when `session` is nil.
    func issue(appID: Int64, scopes: OAuthScopes, session: AviarySession?) async throws -> (token: String, refresh: String?) {
        let token = Self.randomToken()
        let refresh = session == nil ? nil : Self.randomToken()
        try await postgres.execute(
            """
            INSERT INTO gateway.mastodon_tokens
                (token_hash, refresh_hash, app_id, user_id, scopes, access_token, access_expires, refresh_token)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """,
            [Self.digest(token), refresh.map(Self.digest), appID, session?.userID, scopes.text, session?.accessToken,
             session?.expiresAt, session?.refreshToken])
        return (token, refresh)
    }

    /// What `token` grants, its access token renewed when it is about to expire; `invalidToken`
    /// for a token never issued, revoked, or whose session ended.
    func grant(for token: String) async throws -> MastodonGrant {
        // What this store never issued costs no query.
        guard token.utf8.count == 43, token.utf8.allSatisfy(Self.isBase64URL) else { throw MastodonError.invalidToken }
        let key = Self.digest(token)
        let now = Date()
        if let entry = cache.withLock({ $0[key] }), now.timeIntervalSince(entry.checked) < Self.recheck,
            entry.expires.map({ $0.timeIntervalSince(now) > Self.renewal }) ?? true
        {
            return entry.grant
        }
        let resolved = try await postgres.transaction { connection -> (MastodonGrant, Date?)? in
            // FOR UPDATE: one renewal at a time; a second caller waits and reads the renewed token.
            let rows = try await connection.query(
                """
                SELECT app_id, user_id, scopes, access_token, access_expires, refresh_token
                FROM gateway.mastodon_tokens WHERE token_hash = $1 FOR UPDATE
                """, [key])
            guard let row = rows.first, case .success(let scopes) = OAuthScopes.parse(try row.decode(String.self, at: 2)) else {
                return nil
            }
            var grant = MastodonGrant(
                appID: try row.decode(Int64.self, at: 0), userID: try row.decode(Int64?.self, at: 1), scopes: scopes,
                accessToken: try row.decode(String?.self, at: 3))
            guard grant.userID != nil, let expires = try row.decode(Date?.self, at: 4), let refresh = try row.decode(String?.self, at: 5) else {
                return (grant, nil)
            }
            if expires.timeIntervalSince(now) > Self.renewal { return (grant, expires) }
            switch await renew(refresh) {
            case .success(let pair):
                try await connection.execute(
                    "UPDATE gateway.mastodon_tokens SET access_token = $2, access_expires = $3, refresh_token = $4 WHERE token_hash = $1",
                    [key, pair.accessToken, pair.expiresAt, pair.refreshToken])
                grant.accessToken = pair.accessToken
                return (grant, pair.expiresAt)
            case .failure(let error) where error.reason == "unauthenticated":
                try await connection.execute("DELETE FROM gateway.mastodon_tokens WHERE token_hash = $1", [key])
                return nil
            case .failure(let error):
                throw error
            }
        }
        guard let (grant, expires) = resolved else {
            cache.withLock { _ = $0.removeValue(forKey: key) }
            throw MastodonError.invalidToken
        }
        cache.withLock { cache in
            if cache.count >= Self.cacheSweepAbove {
                cache = cache.filter { now.timeIntervalSince($0.value.checked) < Self.recheck }
            }
            cache[key] = (grant, expires, now)
        }
        return grant
    }

    /// The `refresh_token` grant: a new Mastodon token and refresh token of `app` for the session
    /// `refreshToken` stands for (renewed through `auth.refresh`); the old pair stops working.
    func exchange(refreshToken: String, app: MastodonApp) async throws -> (token: String, refresh: String, scopes: OAuthScopes)? {
        let token = Self.randomToken()
        let refresh = Self.randomToken()
        return try await postgres.transaction { connection in
            let rows = try await connection.query(
                "SELECT token_hash, scopes, refresh_token FROM gateway.mastodon_tokens WHERE refresh_hash = $1 AND app_id = $2 FOR UPDATE",
                [Self.digest(refreshToken), app.id])
            guard let row = rows.first, let session = try row.decode(String?.self, at: 2),
                case .success(let scopes) = OAuthScopes.parse(try row.decode(String.self, at: 1))
            else { return nil }
            let old = try row.decode(String.self, at: 0)
            let pair = try await renew(session).get()
            try await connection.execute(
                """
                UPDATE gateway.mastodon_tokens SET token_hash = $2, refresh_hash = $3, access_token = $4, access_expires = $5,
                    refresh_token = $6 WHERE token_hash = $1
                """, [old, Self.digest(token), Self.digest(refresh), pair.accessToken, pair.expiresAt, pair.refreshToken])
            cache.withLock { _ = $0.removeValue(forKey: old) }
            return (token, refresh, scopes)
        }
    }

    /// Revokes `token` of `app`: it stops working, and its session ends (`auth.logout`). False
    /// when it is not a token of `app`'s.
    func revoke(_ token: String, app: MastodonApp) async throws -> Bool {
        let grant: MastodonGrant
        do {
            grant = try await self.grant(for: token)
        } catch is MastodonError {
            return true
        }
        guard grant.appID == app.id else { return false }
        let key = Self.digest(token)
        try await postgres.execute("DELETE FROM gateway.mastodon_tokens WHERE token_hash = $1", [key])
        cache.withLock { _ = $0.removeValue(forKey: key) }
        if let access = grant.accessToken {
            _ = try? await forwarder.call(AccountAPI.logout, Empty(), for: EdgeCaller(token: access))
        }
        return true
    }

    private func renew(_ refreshToken: String) async -> Result<TokenPair, RPCError> {
        do {
            return .success(try await forwarder.call(SessionAPI.refresh, RefreshParams(refreshToken: refreshToken), for: EdgeCaller()))
        } catch let error as RPCError {
            return .failure(error)
        } catch {
            return .failure(.internalError("auth.refresh answered no token pair"))
        }
    }

    // MARK: Authorization codes

    /// A new single-use code for `session`, to be exchanged by `app` with `redirectURI` (and the
    /// PKCE verifier of `challenge`, an S256 challenge, when given).
    func code(app: MastodonApp, redirectURI: String, scopes: OAuthScopes, challenge: String?, session: AviarySession) async throws -> String {
        let code = Self.randomToken()
        // Codes never exchanged go with the next one made.
        try await postgres.execute("DELETE FROM gateway.mastodon_codes WHERE expires_at < now()")
        try await postgres.execute(
            """
            INSERT INTO gateway.mastodon_codes (code_hash, app_id, redirect_uri, scopes, code_challenge, user_id, access_token,
                access_expires, refresh_token, expires_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + make_interval(secs => $10))
            """,
            [Self.digest(code), app.id, redirectURI, scopes.text, challenge, session.userID, session.accessToken, session.expiresAt,
             session.refreshToken, Self.codeLifetime])
        return code
    }

    /// What `code` was issued for, once: the code is gone after this, used or not. Nil for an
    /// unknown, spent or expired code.
    func takeCode(_ code: String) async throws
        -> (appID: Int64, redirectURI: String, scopes: OAuthScopes, challenge: String?, session: AviarySession)?
    {
        let rows = try await postgres.query(
            """
            DELETE FROM gateway.mastodon_codes WHERE code_hash = $1
            RETURNING app_id, redirect_uri, scopes, code_challenge, user_id, access_token, access_expires, refresh_token,
                expires_at > now()
            """, [Self.digest(code)])
        guard let row = rows.first, try row.decode(Bool.self, at: 8),
            case .success(let scopes) = OAuthScopes.parse(try row.decode(String.self, at: 2))
        else { return nil }
        let session = AviarySession(
            userID: try row.decode(Int64.self, at: 4), accessToken: try row.decode(String.self, at: 5),
            refreshToken: try row.decode(String.self, at: 7), expiresAt: try row.decode(Date.self, at: 6))
        return (try row.decode(Int64.self, at: 0), try row.decode(String.self, at: 1), scopes, try row.decode(String?.self, at: 3), session)
    }

    /// Whether `verifier` is the PKCE (S256) verifier of `challenge`.
    static func verifies(_ verifier: String, challenge: String) -> Bool {
        Data(SHA256.hash(data: Data(verifier.utf8))).base64URLEncoded == challenge
    }

    // MARK: Digests

    /// 32 random bytes as 43 characters of base64url: tokens, codes, client ids and secrets.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64URLEncoded
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == 45 || byte == 95
    }

    static func digest(_ secret: String) -> String {
        SHA256.hash(data: Data(secret.utf8)).hexEncoded
    }
}
