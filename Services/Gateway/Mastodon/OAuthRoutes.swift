import AviaryAPI
import AviaryJSON
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RPC

/// Mastodon's OAuth 2 endpoints: apps register themselves, users sign in (password grant, or the
/// authorization-code flow on a minimal sign-in page, PKCE S256 included), and tokens are renewed
/// and revoked. Each token stands for an Aviary session (``MastodonTokens``).
extension MastodonAPI {
    static let outOfBand = "urn:ietf:wg:oauth:2.0:oob"

    func addOAuthRoutes(to router: Router<EdgeContext>) {
        endpoint(router, .post, "api/v1/apps", access: .everyone, scope: "read") { call, _ in
            let params = call.params
            guard let name = try params.text("client_name", atMost: 200) else { throw MastodonError.validation("client_name", "can't be blank") }
            let redirects = params.list("redirect_uris").flatMap { $0.split(whereSeparator: \.isNewline).map(String.init) }
            guard !redirects.isEmpty else { throw MastodonError.validation("redirect_uris", "can't be blank") }
            for uri in redirects where !Self.isRedirectURI(uri) {
                throw MastodonError.validation("redirect_uris", "must be absolute URIs without a fragment (or \(Self.outOfBand))")
            }
            let scopes: OAuthScopes
            switch OAuthScopes.parse(params["scopes"]) {
            case .success(let parsed): scopes = parsed
            case .failure(let unknown): throw MastodonError.validation("scopes", "holds an unknown scope: \(unknown.name.prefix(40))")
            }
            let website = try params.text("website", atMost: 2000)
            let (app, secret) = try await tokens.registerApp(name: name, website: website, redirectURIs: redirects, scopes: scopes)
            return EdgeResponses.json([
                "id": .string(String(app.id)), "name": .string(name), "website": website.map { .string($0) } ?? .null,
                "scopes": .array(scopes.names.sorted().map { .string($0) }),
                "redirect_uri": .string(redirects.joined(separator: "\n")), "redirect_uris": .array(redirects.map { .string($0) }),
                "client_id": .string(app.clientID), "client_secret": .string(secret), "client_secret_expires_at": 0,
                "vapid_key": .string(await vapidKey(call)),
            ])
        }
        router.get(".well-known/oauth-authorization-server") { request, _ in
            let origin = origin(of: request)
            let scopes = OAuthScopes.topLevel.union(OAuthScopes.subScopes).sorted().map { JSONValue.string($0) }
            return EdgeResponses.json([
                "issuer": .string(origin + "/"), "authorization_endpoint": .string(origin + "/oauth/authorize"),
                "token_endpoint": .string(origin + "/oauth/token"), "revocation_endpoint": .string(origin + "/oauth/revoke"),
                "app_registration_endpoint": .string(origin + "/api/v1/apps"), "scopes_supported": .array(scopes),
                "response_types_supported": ["code"], "response_modes_supported": ["query"],
                "code_challenge_methods_supported": ["S256"],
                "grant_types_supported": ["authorization_code", "password", "client_credentials", "refresh_token"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                "service_documentation": "https://docs.joinmastodon.org/",
            ])
        }
        oauthRoute(router, .get, "oauth/authorize") { request, _ in
            await authorizePage(MastodonParams(form: request.uri.query ?? ""), problem: nil)
        }
        oauthRoute(router, .post, "oauth/authorize", authorize)
        oauthRoute(router, .post, "oauth/token", token)
        oauthRoute(router, .post, "oauth/revoke") { request, _ in
            let params = try await Self.bodyParams(request, limit: gateway.settings.maxBodyBytes)
            guard let client = try await client(params, request) else { return Self.oauthError(.unauthorized, "invalid_client") }
            guard let token = params["token"] else { return Self.oauthError(.badRequest, "invalid_request", "token is missing") }
            guard try await tokens.revoke(token, app: client) else {
                return Self.oauthError(.forbidden, "unauthorized_client", "the token was issued to another app")
            }
            return EdgeResponses.json([:])
        }
    }

    /// Adds an OAuth endpoint: it acts for no user yet, so only the address's limit applies.
    private func oauthRoute(
        _ router: Router<EdgeContext>, _ method: HTTPRequest.Method, _ path: RouterPath,
        _ handle: @escaping @Sendable (Request, EdgeContext) async throws -> Response
    ) {
        router.on(path, method: method) { request, context in
            await answering(context, route: "\(path)") {
                try await takeLimit(address: gateway.caller(of: request, peer: context.peer).address, user: nil)
                return try await handle(request, context)
            }
        }
    }

    /// `POST /oauth/token`: the four grants.
    private func token(_ request: Request, _ context: EdgeContext) async throws -> Response {
        let params = try await Self.bodyParams(request, limit: gateway.settings.maxBodyBytes)
        guard let app = try await client(params, request) else {
            return Self.oauthError(.unauthorized, "invalid_client", "client authentication failed")
        }
        let edge = gateway.caller(of: request, peer: context.peer)
        let requested: OAuthScopes
        switch params["scope"].map({ OAuthScopes.parse($0) }) ?? .success(app.scopes) {
        case .success(let scopes) where app.scopes.covers(scopes): requested = scopes
        default: return Self.oauthError(.badRequest, "invalid_scope", "the requested scope is invalid, unknown, or beyond the app's")
        }
        switch params["grant_type"] {
        case "password":
            guard let login = params["username"], let password = params["password"] else {
                return Self.oauthError(.badRequest, "invalid_request", "username and password are required")
            }
            let session: AviarySession
            do {
                session = AviarySession(try await gateway.forwarder.call(SessionAPI.login, LoginParams(login: login, password: password), for: edge))
            } catch let error as RPCError where error.reason == "unauthenticated" || error.reason == "validation" {
                return Self.oauthError(.badRequest, "invalid_grant", "the user name or password is wrong")
            }
            return try await tokenAnswer(app: app, scopes: requested, session: session)
        case "authorization_code":
            guard let code = params["code"], let grant = try await tokens.takeCode(code) else {
                return Self.oauthError(.badRequest, "invalid_grant", "the code is invalid, expired or spent")
            }
            let verified = grant.challenge.map { challenge in
                params["code_verifier"].map { MastodonTokens.verifies($0, challenge: challenge) } ?? false
            }
            guard grant.appID == app.id, grant.redirectURI == params["redirect_uri"], verified ?? true else {
                // The code is spent: the session its sign-in started ends with it.
                _ = try? await gateway.forwarder.call(AccountAPI.logout, Empty(), for: EdgeCaller(token: grant.session.accessToken))
                return Self.oauthError(
                    .badRequest, "invalid_grant", "the code is not this app's, or redirect_uri or code_verifier does not match")
            }
            return try await tokenAnswer(app: app, scopes: grant.scopes, session: grant.session)
        case "refresh_token":
            guard let refresh = params["refresh_token"] else {
                return Self.oauthError(.badRequest, "invalid_request", "refresh_token is missing")
            }
            let renewed: (token: String, refresh: String, scopes: OAuthScopes)?
            do {
                renewed = try await tokens.exchange(refreshToken: refresh, app: app)
            } catch let error as RPCError where error.reason == "unauthenticated" {
                renewed = nil
            }
            guard let renewed else { return Self.oauthError(.badRequest, "invalid_grant", "the refresh token is invalid or revoked") }
            return Self.tokenJSON(renewed.token, refresh: renewed.refresh, scopes: renewed.scopes)
        case "client_credentials":
            return try await tokenAnswer(app: app, scopes: requested, session: nil)
        default:
            return Self.oauthError(
                .badRequest, "unsupported_grant_type", "grant_type is one of authorization_code, password, refresh_token, client_credentials")
        }
    }

    private func tokenAnswer(app: MastodonApp, scopes: OAuthScopes, session: AviarySession?) async throws -> Response {
        let issued = try await tokens.issue(appID: app.id, scopes: scopes, session: session)
        return Self.tokenJSON(issued.token, refresh: issued.refresh, scopes: scopes)
    }

    /// Mastodon's Token entity.
    static func tokenJSON(_ token: String, refresh: String?, scopes: OAuthScopes) -> Response {
        var body: [String: JSONValue] = [
            "access_token": .string(token), "token_type": "Bearer", "scope": .string(scopes.text),
            "created_at": .int(Int64(Date().timeIntervalSince1970)),
        ]
        if let refresh { body["refresh_token"] = .string(refresh) }
        return EdgeResponses.json(.object(body))
    }

    /// The app that authenticates the request: `client_id` and `client_secret` in the body, or in
    /// HTTP Basic.
    private func client(_ params: MastodonParams, _ request: Request) async throws -> MastodonApp? {
        var id = params["client_id"]
        var secret = params["client_secret"]
        if let basic = request.headers[.authorization], basic.lowercased().hasPrefix("basic "),
            let decoded = Data(base64Encoded: String(basic.dropFirst(6))).flatMap({ String(data: $0, encoding: .utf8) }),
            let colon = decoded.firstIndex(of: ":")
        {
            id = String(decoded[..<colon]).removingPercentEncoding
            secret = String(decoded[decoded.index(after: colon)...]).removingPercentEncoding
        }
        guard let id, let secret, id.count <= 100, secret.count <= 100 else { return nil }
        return try await tokens.app(clientID: id, secret: secret)
    }

    // MARK: The sign-in page

    /// `POST /oauth/authorize`: the sign-in form sent back. The password is checked with
    /// `auth.login`; its session waits under a code the app exchanges.
    private func authorize(_ request: Request, _ context: EdgeContext) async throws -> Response {
        let params = try await Self.bodyParams(request, limit: gateway.settings.maxBodyBytes)
        let flow: AuthorizationRequest
        switch await authorizationRequest(params) {
        case .refused(let page): return page
        case .valid(let valid): flow = valid
        }
        guard let login = params["login"], let password = params["password"] else {
            return await authorizePage(params, problem: "Enter your user name and password.")
        }
        let session: AviarySession
        do {
            session = AviarySession(
                try await gateway.forwarder.call(
                    SessionAPI.login, LoginParams(login: login, password: password), for: gateway.caller(of: request, peer: context.peer)))
        } catch let error as RPCError where error.reason == "unauthenticated" || error.reason == "validation" {
            return await authorizePage(params, problem: "Invalid user name or password.")
        } catch let error as RPCError where error.reason == "rate_limited" {
            return await authorizePage(params, problem: "Too many attempts: try again in a minute.")
        }
        let code = try await tokens.code(
            app: flow.app, redirectURI: flow.redirectURI, scopes: flow.scopes, challenge: flow.challenge, session: session)
        if flow.redirectURI == Self.outOfBand {
            return Self.html(
                "<h1>Authorization code</h1><p>Copy this code into \(StatusHTML.escape(flow.app.name)):</p><p><code>\(code)</code></p>")
        }
        var location = URLComponents(string: flow.redirectURI)!
        location.queryItems = (location.queryItems ?? []) + [URLQueryItem(name: "code", value: code)]
            + (params["state"].map { [URLQueryItem(name: "state", value: $0)] } ?? [])
        return Response(status: .found, headers: [.location: location.string ?? flow.redirectURI])
    }

    private struct AuthorizationRequest {
        var app: MastodonApp
        var redirectURI: String
        var scopes: OAuthScopes
        var challenge: String?
    }

    private enum CheckedAuthorization {
        case valid(AuthorizationRequest)
        case refused(Response)
    }

    /// The app, redirect URI, scopes and PKCE challenge of an authorization request, checked; or
    /// the page that says what is wrong (never a redirect to a URI the app did not register).
    private func authorizationRequest(_ params: MastodonParams) async -> CheckedAuthorization {
        func refuse(_ problem: String) -> CheckedAuthorization {
            .refused(Self.html("<h1>Sign-in refused</h1><p>\(StatusHTML.escape(problem))</p>", status: .badRequest))
        }
        guard params["response_type"] == "code" else { return refuse("response_type must be code.") }
        guard let clientID = params["client_id"], clientID.count <= 100, let app = try? await tokens.app(clientID: clientID) else {
            return refuse("The app (client_id) is unknown.")
        }
        guard let redirect = params["redirect_uri"] ?? app.redirectURIs.first, app.redirectURIs.contains(redirect) else {
            return refuse("redirect_uri is not one the app registered.")
        }
        guard case .success(let scopes) = params["scope"].map({ OAuthScopes.parse($0) }) ?? .success(app.scopes), app.scopes.covers(scopes)
        else { return refuse("The requested scope is unknown or beyond the app's.") }
        var challenge: String?
        if let given = params["code_challenge"] {
            guard params["code_challenge_method"] == "S256" else { return refuse("code_challenge_method must be S256.") }
            guard (43...128).contains(given.count) else { return refuse("code_challenge must be 43 to 128 characters.") }
            challenge = given
        }
        return .valid(AuthorizationRequest(app: app, redirectURI: redirect, scopes: scopes, challenge: challenge))
    }

    /// The sign-in form, carrying the authorization request's parameters through.
    private func authorizePage(_ params: MastodonParams, problem: String?) async -> Response {
        let flow: AuthorizationRequest
        switch await authorizationRequest(params) {
        case .refused(let page): return page
        case .valid(let valid): flow = valid
        }
        let carried = ["response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method"]
            .compactMap { name in params[name].map { #"<input type="hidden" name="\#(name)" value="\#(StatusHTML.escape($0))">"# } }
            .joined(separator: "\n")
        let notice = problem.map { "<p><strong>\(StatusHTML.escape($0))</strong></p>" } ?? ""
        return Self.html(
            """
            <h1>Sign in to authorize \(StatusHTML.escape(flow.app.name))</h1>
            <p>It asks for: \(StatusHTML.escape(flow.scopes.text)).</p>\(notice)
            <form method="post" action="/oauth/authorize">
            \(carried)
            <p><label>User name or email <input name="login" autocomplete="username" required></label></p>
            <p><label>Password <input name="password" type="password" autocomplete="current-password" required></label></p>
            <p><button type="submit">Authorize</button></p>
            </form>
            """, status: problem == nil ? .ok : .unauthorized)
    }

    private static func html(_ body: String, status: HTTPResponse.Status = .ok) -> Response {
        let page = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Aviary</title></head><body>\n\(body)\n</body></html>\n"
        return Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: page)))
    }

    /// An OAuth error (RFC 6749 §5.2), as Mastodon's OAuth endpoints answer.
    private static func oauthError(_ status: HTTPResponse.Status, _ code: String, _ description: String? = nil) -> Response {
        var body: [String: JSONValue] = ["error": .string(code)]
        if let description { body["error_description"] = .string(description) }
        return EdgeResponses.json(.object(body), status: status)
    }

    /// An absolute URI without a fragment, or the out-of-band one.
    static func isRedirectURI(_ uri: String) -> Bool {
        if uri == outOfBand { return true }
        guard uri.count <= 2000, let parsed = URLComponents(string: uri), let scheme = parsed.scheme, !scheme.isEmpty else { return false }
        return parsed.fragment == nil && (parsed.host != nil || !["http", "https"].contains(scheme.lowercased()))
    }
}
