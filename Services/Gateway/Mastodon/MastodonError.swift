import AviaryJSON
import HTTPTypes
import Hummingbird
import RPC

/// An answer of the Mastodon API that is not a success: `{"error": "..."}` with the status Mastodon
/// gives for the same case. Every error the adapter meets becomes one, here and nowhere else.
struct MastodonError: Error, Sendable {
    var status: HTTPResponse.Status
    var message: String
    var headers: HTTPFields = [:]

    static let invalidToken = MastodonError(status: .unauthorized, message: "The access token is invalid")
    static let outsideScopes = MastodonError(status: .forbidden, message: "This action is outside the authorized scopes")
    static let notFound = MastodonError(status: .notFound, message: "Record not found")
    static let userRequired = MastodonError(status: .unprocessableContent, message: "This method requires an authenticated user")

    /// A parameter Mastodon's own validation would refuse: 422, naming it.
    static func validation(_ field: String, _ problem: String) -> MastodonError {
        MastodonError(status: .unprocessableContent, message: "Validation failed: \(field) \(problem)")
    }

    /// A feature Aviary has no equivalent for, answered as Mastodon answers a disabled one.
    static func unsupported(_ what: String) -> MastodonError {
        MastodonError(status: .unprocessableContent, message: "\(what) is not supported on this server")
    }

    var response: Response {
        EdgeResponses.json(.object(["error": .string(message)]), status: status, headers: headers)
    }
}

extension MastodonError {
    /// What a service's contract error says, in Mastodon's terms.
    init(_ error: RPCError) {
        switch error.reason {
        case "unauthenticated": self = .invalidToken
        case "not_found": self = .notFound
        case "forbidden": self.init(status: .forbidden, message: "This action is not allowed")
        case "validation", "conflict": self.init(status: .unprocessableContent, message: "Validation failed: \(error.message)")
        case "rate_limited":
            var headers = HTTPFields()
            if let retry = error.data?["retryAfterMs"]?.intValue { headers[.retryAfter] = String((retry + 999) / 1000) }
            self.init(status: .tooManyRequests, message: "Too many requests", headers: headers)
        case "too_large": self.init(status: .contentTooLarge, message: error.message)
        case "unavailable", "timeout": self.init(status: .serviceUnavailable, message: "Service unavailable: \(error.message)")
        default:
            switch error.code {
            case -32602: self.init(status: .unprocessableContent, message: "Validation failed: \(error.message)")
            default: self.init(status: .internalServerError, message: "An internal error occurred")
            }
        }
    }
}
