import NIOCore
import NIOHTTP1

/// An extra endpoint of the admin HTTP server, registered by a service (media serves
/// `GET /media/<id>` this way): every request whose path starts with ``pathPrefix`` goes to
/// ``handler``.
///
/// A route that accepts GET also answers HEAD: its handler sees `.HEAD` and may skip producing the
/// body, but should then set `Content-Length` itself; the server never sends a body for HEAD.
public struct AdminRoute: Sendable {
    /// The path prefix this route serves, e.g. `/media/`. The longest matching prefix wins.
    public var pathPrefix: String
    /// The methods it accepts; others get 405 with an `Allow` header.
    public var methods: [HTTPMethod]
    /// Produces the response. A thrown error becomes a 500 and is logged.
    public var handler: @Sendable (AdminRequest) async throws -> AdminResponse

    public init(
        pathPrefix: String,
        methods: [HTTPMethod] = [.GET],
        handler: @escaping @Sendable (AdminRequest) async throws -> AdminResponse
    ) {
        self.pathPrefix = pathPrefix
        self.methods = methods
        self.handler = handler
    }

    func accepts(_ method: HTTPMethod) -> Bool {
        self.methods.contains(method) || (method == .HEAD && self.methods.contains(.GET))
    }

    var allowHeader: String {
        var names = self.methods.map(\.rawValue)
        if self.methods.contains(.GET) && !self.methods.contains(.HEAD) { names.append("HEAD") }
        return names.joined(separator: ", ")
    }
}

/// The request an ``AdminRoute`` handles. Request bodies are not read.
public struct AdminRequest: Sendable {
    public var method: HTTPMethod
    /// The request target as sent: `/media/123?size=small`.
    public var uri: String
    /// The path part of ``uri``: `/media/123`.
    public var path: String
    /// The query part of ``uri`` after `?`, if any: `size=small`.
    public var query: String?
    public var headers: HTTPHeaders

    public init(method: HTTPMethod, uri: String, headers: HTTPHeaders) {
        self.method = method
        self.uri = uri
        if let question = uri.firstIndex(of: "?") {
            self.path = String(uri[..<question])
            self.query = String(uri[uri.index(after: question)...])
        } else {
            self.path = uri
            self.query = nil
        }
        self.headers = headers
    }
}

/// What an ``AdminRoute`` answers. The server adds `Content-Length` (from the body, unless set)
/// and `Connection`.
public struct AdminResponse: Sendable {
    public var status: HTTPResponseStatus
    public var headers: HTTPHeaders
    public var body: ByteBuffer
    /// A body too large to hold in memory (a file), written piece by piece after the head instead of
    /// ``body``. The route must set `Content-Length` itself; the stream is not called for HEAD.
    public var bodyStream: AdminBodyStream?

    public init(
        status: HTTPResponseStatus, headers: HTTPHeaders = [:], body: ByteBuffer = ByteBuffer(),
        bodyStream: AdminBodyStream? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyStream = bodyStream
    }

    /// A `text/plain` response.
    public static func text(_ text: String, status: HTTPResponseStatus = .ok) -> AdminResponse {
        AdminResponse(
            status: status, headers: ["content-type": "text/plain; charset=utf-8"], body: ByteBuffer(string: text))
    }
}

/// Writes a streamed response body: it calls `write` once per piece, in order; an error thrown
/// midway closes the connection (the client sees a short body).
public typealias AdminBodyStream = @Sendable (_ write: AdminBodyWriter) async throws -> Void

/// Sends one piece of a streamed body, waiting while the client is slow to read.
public typealias AdminBodyWriter = @Sendable (ByteBuffer) async throws -> Void
