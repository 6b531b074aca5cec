import AviaryJSON
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RPC
import ServiceKit

/// The gateway's HTTP answers: JSON bodies, the status of a contract error, the limits' headers.
enum EdgeResponses {
    static func json(_ body: Data, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        json(ByteBuffer(bytes: body), status: status, headers: headers)
    }

    static func json(_ value: RawJSON, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        json(ByteBuffer(bytes: value.bytes), status: status, headers: headers)
    }

    private static func json(_ body: ByteBuffer, status: HTTPResponse.Status, headers: HTTPFields) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: body))
    }

    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        json(ByteBuffer(bytes: value.jsonBytes ?? Array("{}".utf8)), status: status, headers: headers)
    }

    /// An error that is not a JSON-RPC answer: `{"error": {"status", "message", ...}}`.
    static func failure(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> Response {
        json(failureBody(status, message), status: status, headers: headers)
    }

    /// The body of ``failure(_:_:headers:)``.
    static func failureBody(_ status: HTTPResponse.Status, _ message: String) -> Data {
        let body: JSONValue = .object(["error": .object(["status": .int(Int64(status.code)), "message": .string(message)])])
        return (try? JSONEncoder().encode(body)) ?? Data("{}".utf8)
    }

    /// A contract error answered over plain HTTP (the media routes): its status, and the error as
    /// the contract shapes it (`code`, `message`, `data`).
    static func failure(_ error: RPCError, headers: HTTPFields = [:]) -> Response {
        var body: [String: JSONValue] = ["status": .int(Int64(status(of: error).code)), "code": .int(Int64(error.code)), "message": .string(error.message)]
        if let data = error.data { body["data"] = data }
        var fields = headers
        if let retry = error.data?["retryAfterMs"]?.intValue {
            fields[.retryAfter] = String((retry + 999) / 1000)
        }
        return json(.object(["error": .object(body)]), status: status(of: error), headers: fields)
    }

    /// The HTTP status that says what a contract error says.
    static func status(of error: RPCError) -> HTTPResponse.Status {
        switch error.reason {
        case "unauthenticated": .unauthorized
        case "forbidden": .forbidden
        case "not_found": .notFound
        case "conflict": .conflict
        case "validation": .unprocessableContent
        case "rate_limited": .tooManyRequests
        case "too_large": .contentTooLarge
        case "unavailable": .serviceUnavailable
        case "timeout": .gatewayTimeout
        default:
            switch error.code {
            case -32700, -32600, -32602: .badRequest
            case -32601: .notFound
            default: .internalServerError
            }
        }
    }

    /// `RateLimit-Limit`, `-Remaining`, `-Reset` (seconds) of a take, and `Retry-After` when refused.
    static func limitHeaders(_ outcome: RateLimiter.Outcome?) -> HTTPFields {
        guard let outcome else { return [:] }
        var fields = HTTPFields()
        fields[rateLimitLimit] = String(outcome.limit)
        fields[rateLimitRemaining] = String(outcome.remaining)
        fields[rateLimitReset] = String((outcome.resetMs + 999) / 1000)
        if !outcome.allowed { fields[.retryAfter] = String((outcome.retryAfterMs + 999) / 1000) }
        return fields
    }

    static let rateLimitLimit = HTTPField.Name("RateLimit-Limit")!
    static let rateLimitRemaining = HTTPField.Name("RateLimit-Remaining")!
    static let rateLimitReset = HTTPField.Name("RateLimit-Reset")!
}

/// Headers every answer carries (the usual hardening of an API that serves no pages), CORS for the
/// configured origins, and a JSON body for the errors the framework raises (an unknown path, a
/// body past its limit).
struct EdgeHeadersMiddleware: RouterMiddleware {
    typealias Context = EdgeContext
    let corsOrigins: Set<String>
    let tls: Bool

    func handle(_ request: Request, context: EdgeContext, next: (Request, EdgeContext) async throws -> Response) async throws -> Response {
        let origin = request.headers[.origin]
        let allowed = origin.map { corsOrigins.contains($0) } ?? false
        if request.method == .options, allowed {
            var response = Response(status: .noContent)
            response.headers[.accessControlAllowMethods] = "GET, POST, OPTIONS"
            response.headers[.accessControlAllowHeaders] = "Authorization, Content-Type"
            response.headers[.accessControlMaxAge] = "600"
            return decorate(response, origin: origin, allowed: true)
        }
        var response: Response
        do {
            response = try await next(request, context)
        } catch is NIOTooManyBytesError {
            response = EdgeResponses.failure(.contentTooLarge, "the body is larger than this endpoint accepts")
        } catch let error as HTTPError {
            response = EdgeResponses.failure(error.status, error.body ?? error.status.reasonPhrase, headers: error.headers)
        }
        return decorate(response, origin: origin, allowed: allowed)
    }

    private static let frameOptions = HTTPField.Name("X-Frame-Options")!
    private static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    private static let contentSecurityPolicy = HTTPField.Name("Content-Security-Policy")!

    private func decorate(_ response: Response, origin: String?, allowed: Bool) -> Response {
        var response = response
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[Self.frameOptions] = "DENY"
        response.headers[Self.referrerPolicy] = "no-referrer"
        response.headers[Self.contentSecurityPolicy] = "default-src 'none'; frame-ancestors 'none'"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        if tls { response.headers[.strictTransportSecurity] = "max-age=31536000" }
        if allowed, let origin {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.vary] = "Origin"
            response.headers[.accessControlExposeHeaders] =
                "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After"
        }
        return response
    }
}
