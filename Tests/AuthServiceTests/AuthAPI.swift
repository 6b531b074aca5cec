import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import Testing

/// What a sign-in answers (`auth.register`, `auth.login`, `auth.loginWithGoogle`).
struct SignIn: Decodable, Sendable {
    var user: User
    var accessToken: String
    var refreshToken: String
    var expiresAt: Date
    var created: Bool?
}

/// What `auth.refresh` answers.
struct Tokens: Decodable, Sendable {
    var accessToken: String
    var refreshToken: String
    var expiresAt: Date
}

/// A registered account and the password it was registered with.
struct Account: Sendable {
    var signIn: SignIn
    var email: String
    var password: String

    var id: String { signIn.user.id.description }
    var username: String { signIn.user.username }
    var token: String { signIn.accessToken }
}

/// Typed calls to one auth instance.
struct AuthAPI: Sendable {
    let client: RPCClient

    func call<Result: Decodable>(
        _ method: String, _ params: JSONValue = [:], token: String? = nil, service: String? = nil,
        as type: Result.Type = JSONValue.self
    ) async throws -> Result {
        try await client.call(method, params: params, meta: RequestMeta(token: token, service: service), as: type)
    }

    /// Registers a new account with unique names; `fields` override the generated params.
    func register(_ fields: [String: JSONValue] = [:]) async throws -> Account {
        let username = Unique.username()
        var params: [String: JSONValue] = [
            "email": .string("\(username)@example.com"), "password": "correct horse battery",
            "username": .string(username), "fullname": "Test Person",
        ]
        params.merge(fields) { _, given in given }
        let signIn = try await call("auth.register", .object(params), as: SignIn.self)
        return Account(signIn: signIn, email: params["email"]!.stringValue!, password: params["password"]!.stringValue!)
    }

    func login(_ login: String, _ password: String) async throws -> SignIn {
        try await call("auth.login", ["login": .string(login), "password": .string(password)], as: SignIn.self)
    }

    func me(_ token: String) async throws -> User {
        try await call("auth.me", token: token, as: User.self)
    }

    func refresh(_ refreshToken: String) async throws -> Tokens {
        try await call("auth.refresh", ["refreshToken": .string(refreshToken)], as: Tokens.self)
    }
}

/// Names no other test uses, so tests can run in parallel against shared instances.
enum Unique {
    /// 15 characters: a letter and 14 of `[a-z0-9]`.
    static func username(prefix: String = "t") -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return prefix + String((0..<(15 - prefix.count)).map { _ in alphabet.randomElement()! })
    }

    static func word(_ length: Int = 8) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz")
        return String((0..<length).map { _ in alphabet.randomElement()! })
    }
}

/// Runs `body` expecting an `RPCError` with `code` (and `field`, when given); returns it.
@discardableResult
func expectRPCError(
    _ code: Int, field: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> RPCError? {
    do {
        try await body()
        Issue.record("expected error \(code)\(field.map { " on \($0)" } ?? ""), got success", sourceLocation: sourceLocation)
        return nil
    } catch let error as RPCError {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
        if let field {
            #expect(error.field == field, "\(error.message)", sourceLocation: sourceLocation)
        }
        return error
    } catch {
        Issue.record("expected RPCError \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// The contract's error codes.
enum Code {
    static let methodNotFound = -32601
    static let invalidParams = -32602
    static let unauthenticated = -32001
    static let forbidden = -32003
    static let notFound = -32004
    static let conflict = -32009
    static let validation = -32022
    static let rateLimited = -32029
    static let unavailable = -32050
}
