import AviaryJSON
import Foundation
import Testing
import TestSupport

/// A Mastodon app as the tests drive it over HTTP: its credentials, and calls with a token.
struct MastodonClient: Sendable {
    let url: String
    let clientID: String
    let clientSecret: String

    static let outOfBand = "urn:ietf:wg:oauth:2.0:oob"

    /// Registers an app (`POST /api/v1/apps`).
    static func register(_ url: String, scopes: String = "read write follow", redirect: String = outOfBand) async throws -> MastodonClient {
        let reply = try await form("POST", url + "/api/v1/apps", ["client_name": "tests", "redirect_uris": redirect, "scopes": scopes])
        guard reply.status == 200, let id = reply.json["client_id"]?.stringValue, let secret = reply.json["client_secret"]?.stringValue else {
            throw EdgeTestError("POST /api/v1/apps answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
        }
        return MastodonClient(url: url, clientID: id, clientSecret: secret)
    }

    /// The shared stack, a new app on it, and a user for each of `names`, registered and signed
    /// in with the app (password grant, `read write follow`).
    static func signedIn(_ names: String...) async throws -> (edge: GatewayStack, app: MastodonClient, people: [(EdgeUser, String)]) {
        let edge = try await GatewayStack.shared()
        let app = try await register(edge.url)
        var people: [(EdgeUser, String)] = []
        for name in names {
            let user = try await edge.register(name)
            people.append((user, try await app.signIn(user)))
        }
        return (edge, app, people)
    }

    /// `POST /oauth/token` with the app's credentials and `fields`.
    func token(_ fields: [String: String]) async throws -> EdgeHTTP.Reply {
        try await Self.form("POST", url + "/oauth/token", fields.merging(["client_id": clientID, "client_secret": clientSecret]) { given, _ in given })
    }

    /// A token of `user` through the password grant.
    func signIn(_ user: EdgeUser, scope: String = "read write follow") async throws -> String {
        let reply = try await token(["grant_type": "password", "username": user.username, "password": "correct horse battery", "scope": scope])
        guard let token = reply.json["access_token"]?.stringValue else {
            throw EdgeTestError("the password grant answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
        }
        return token
    }

    func get(_ path: String, token: String? = nil) async throws -> EdgeHTTP.Reply {
        try await EdgeHTTP.send("GET", url + path, headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:])
    }

    func send(_ method: String, _ path: String, _ fields: [String: String] = [:], token: String?, headers: [String: String] = [:])
        async throws -> EdgeHTTP.Reply
    {
        var headers = headers
        if let token { headers["Authorization"] = "Bearer \(token)" }
        return try await Self.form(method, url + path, fields, headers: headers)
    }

    /// A form-encoded request, as Mastodon.py sends them.
    static func form(_ method: String, _ url: String, _ fields: [String: String], headers: [String: String] = [:]) async throws
        -> EdgeHTTP.Reply
    {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.map { "\($0.key.addingPercentEncoding(withAllowedCharacters: allowed)!)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&")
        return try await EdgeHTTP.send(
            method, url, body: Data(body.utf8), headers: headers.merging(["Content-Type": "application/x-www-form-urlencoded"]) { given, _ in given })
    }
}

extension EdgeHTTP.Reply {
    /// The body as text, for failure messages.
    var text: String { String(decoding: body, as: UTF8.self) }
}
