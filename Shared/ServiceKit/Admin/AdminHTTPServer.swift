import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import Prometheus
import RPC
import ServiceLifecycle

/// The admin HTTP/1.1 server of a service, a Hummingbird application: `GET /healthz` (liveness,
/// always `ok`), `GET /readyz` (the readiness checks as JSON, 200 when all pass, 503 otherwise),
/// `GET /metrics` (Prometheus text), and the routes the service adds (``Routes``). A GET route
/// answers HEAD too, without a body; a path asked with a method it has no route for gets 405 with
/// `Allow`, an unknown path 404.
///
/// It is a `Service`: run it in the process's `ServiceGroup`. On graceful shutdown it stops
/// accepting, closes idle connections at once, and closes busy ones after their current response
/// or ``AdminConnectionHandler/quiesceGrace``, whichever comes first. Request heads over 64 KiB
/// are refused with 400; request bodies are read and dropped.
public actor AdminHTTPServer: Service {
    /// Returns named readiness checks, e.g. `["postgres": true, "redis": false]`.
    public typealias ReadinessCheck = @Sendable () async -> [String: Bool]
    /// Adds a service's routes to the admin router:
    /// `{ router in router.get("/media/{id}") { request, context in … } }`.
    public typealias Routes = @Sendable (Router<BasicRequestContext>) -> Void

    /// The largest request head (request line and header fields) accepted.
    public static let maxHeaderBytes = 64 * 1024
    /// A connection with no traffic for this long is closed, so forgotten clients do not pile up.
    static let idleTimeout = TimeAmount.seconds(60)

    private enum State {
        case idle
        case listening(port: Int)
        case finished((any Error)?)
    }

    private let host: String
    private let port: Int
    private let eventLoopGroup: any EventLoopGroup
    private let responder: RouterResponder<BasicRequestContext>
    private let connectionLimit: ConnectionLimit?
    private let logger: Logger
    private var state = State.idle
    private var portWaiters: [CheckedContinuation<Int, any Error>] = []

    /// - Parameters:
    ///   - host: the address to bind (`AVIARY_HOST`).
    ///   - port: the port to bind; 0 picks a free one (read it from ``boundPort``).
    ///   - registry: the metrics served on `/metrics` (from ``MetricsBootstrap/bootstrap()``).
    ///   - beforeMetrics: called for every `/metrics` request, before the registry is rendered: it
    ///     records the gauges whose value is read when they are scraped.
    ///   - readiness: called for every `/readyz` request.
    ///   - routes: add the service's extra endpoints.
    ///   - connectionLimit: shared with the process's other listeners: a connection over it is
    ///     answered 503 and closed.
    public init(
        host: String,
        port: Int,
        registry: PrometheusCollectorRegistry,
        beforeMetrics: @escaping @Sendable () -> Void = {},
        readiness: @escaping ReadinessCheck = { [:] },
        routes: [Routes] = [],
        connectionLimit: ConnectionLimit? = nil,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) {
        self.host = host
        self.port = port
        self.connectionLimit = connectionLimit
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger

        let router = Router(options: .autoGenerateHeadEndpoints)
        router.add(middleware: RouteErrorLogging())
        router.get("/healthz") { _, _ in "ok" }
        router.get("/readyz") { _, _ in await Self.readinessResponse(readiness) }
        router.get("/metrics") { _, _ in
            beforeMetrics()
            return Response(
                status: .ok, headers: [.contentType: MetricsBootstrap.contentType],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: MetricsBootstrap.render(registry))))
        }
        for add in routes { add(router) }
        router.refuseOtherMethods()
        self.responder = router.buildResponder()
    }

    /// The port the server listens on, once it does: waits for ``run()`` to bind.
    /// - Throws: the bind error, or ``AdminHTTPServerError`` when the server has already stopped.
    public var boundPort: Int {
        get async throws {
            switch self.state {
            case .listening(let port):
                return port
            case .finished(let error):
                throw error ?? AdminHTTPServerError(message: "the admin server has stopped")
            case .idle:
                return try await withCheckedThrowingContinuation { self.portWaiters.append($0) }
            }
        }
    }

    /// Binds, serves until graceful shutdown or cancellation, and returns once every connection
    /// is closed.
    public func run() async throws {
        let http1 = HTTP1Channel.Configuration(
            idleTimeout: Self.idleTimeout,
            httpDecoderConfiguration: .init(maxHeaderFieldSize: Self.maxHeaderBytes, maxHeaderListSize: Self.maxHeaderBytes))
        let connectionLimit = self.connectionLimit
        let application = Application(
            responder: self.responder,
            server: HTTPServerBuilder { responder in
                AdminChildChannel(
                    base: HTTP1Channel(responder: responder, configuration: http1), connectionLimit: connectionLimit)
            },
            configuration: .init(address: .hostname(self.host, port: self.port), serverName: nil),
            onServerRunning: { channel in await self.listening(on: channel.localAddress?.port ?? 0) },
            eventLoopGroupProvider: .shared(self.eventLoopGroup),
            logger: self.logger)
        do {
            try await application.run()
        } catch {
            self.finish(error)
            throw error
        }
        self.finish(nil)
    }

    private func listening(on port: Int) {
        self.state = .listening(port: port)
        for waiter in self.portWaiters { waiter.resume(returning: port) }
        self.portWaiters = []
    }

    private func finish(_ error: (any Error)?) {
        if case .finished = self.state { return }
        self.state = .finished(error)
        let failure = error ?? AdminHTTPServerError(message: "the admin server has stopped")
        for waiter in self.portWaiters { waiter.resume(throwing: failure) }
        self.portWaiters = []
    }

    private static func readinessResponse(_ readiness: ReadinessCheck) async -> Response {
        struct Body: Encodable {
            var ready: Bool
            var checks: [String: Bool]
        }
        let checks = await readiness()
        let ready = checks.values.allSatisfy { $0 }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding a Bool dictionary cannot fail.
        let json = (try? encoder.encode(Body(ready: ready, checks: checks))) ?? Data()
        return Response(
            status: ready ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
    }
}

/// The admin server stopped before it listened, or is asked for its port after stopping.
public struct AdminHTTPServerError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { self.message }
}

extension Router {
    /// Answers 405 with `Allow` on every path with a route, for the common methods it has no route
    /// for (Hummingbird's router answers them 404). A GET route answers HEAD as well.
    fileprivate func refuseOtherMethods() {
        let methods: [HTTPRequest.Method] = [.get, .head, .post, .put, .delete, .patch, .options]
        for routes in Dictionary(grouping: self.routes, by: \.path.description).values {
            var allowed = Set(routes.map(\.method))
            if allowed.contains(.get) { allowed.insert(.head) }
            let allow = allowed.map(\.rawValue).sorted().joined(separator: ", ")
            for method in methods where !allowed.contains(method) {
                self.on(routes[0].path, method: method) { _, _ -> Response in
                    throw HTTPError(.methodNotAllowed, headers: [.allow: allow])
                }
            }
        }
    }
}

/// Logs what a route threw, which Hummingbird answers 500 and logs only at debug level.
private struct RouteErrorLogging: RouterMiddleware {
    typealias Context = BasicRequestContext

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError {
            throw error
        } catch {
            context.logger.error(
                "admin route failed",
                metadata: [
                    "http.route": "\(context.endpointPath ?? "-")", "http.target": "\(request.uri)", "error": "\(error)",
                ])
            throw error
        }
    }
}
