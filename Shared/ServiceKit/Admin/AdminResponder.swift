import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Prometheus

/// Maps one admin request to its response: the built-in `/healthz`, `/readyz` and `/metrics`,
/// then the service's own ``AdminRoute``s by longest prefix.
struct AdminResponder: Sendable {
    let registry: PrometheusCollectorRegistry
    let beforeMetrics: @Sendable () -> Void
    let readiness: AdminHTTPServer.ReadinessCheck
    let routes: [AdminRoute]
    let logger: Logger

    init(
        registry: PrometheusCollectorRegistry,
        beforeMetrics: @escaping @Sendable () -> Void = {},
        readiness: @escaping AdminHTTPServer.ReadinessCheck,
        routes: [AdminRoute],
        logger: Logger
    ) {
        self.registry = registry
        self.beforeMetrics = beforeMetrics
        self.readiness = readiness
        // Longest prefix first, so `/media/private/` wins over `/media/`.
        self.routes = routes.sorted { $0.pathPrefix.count > $1.pathPrefix.count }
        self.logger = logger
    }

    func respond(to request: AdminRequest) async -> AdminResponse {
        if let builtIn = self.builtInHandler(for: request.path) {
            guard request.method == .GET || request.method == .HEAD else {
                return Self.methodNotAllowed(allow: "GET, HEAD")
            }
            return await builtIn()
        }
        guard let route = self.routes.first(where: { request.path.hasPrefix($0.pathPrefix) }) else {
            return .text("not found\n", status: .notFound)
        }
        guard route.accepts(request.method) else {
            return Self.methodNotAllowed(allow: route.allowHeader)
        }
        do {
            return try await route.handler(request)
        } catch {
            self.logger.error(
                "admin route failed",
                metadata: ["http.route": "\(route.pathPrefix)", "http.target": "\(request.uri)", "error": "\(error)"])
            return .text("internal error\n", status: .internalServerError)
        }
    }

    private func builtInHandler(for path: String) -> (@Sendable () async -> AdminResponse)? {
        switch path {
        case "/healthz": { .text("ok") }
        case "/readyz": { await self.readinessResponse() }
        case "/metrics": { self.metricsResponse() }
        default: nil
        }
    }

    private func readinessResponse() async -> AdminResponse {
        struct Body: Encodable {
            var ready: Bool
            var checks: [String: Bool]
        }
        let checks = await self.readiness()
        let ready = checks.values.allSatisfy { $0 }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding a Bool dictionary cannot fail.
        let json = (try? encoder.encode(Body(ready: ready, checks: checks))) ?? Data()
        return AdminResponse(
            status: ready ? .ok : .serviceUnavailable,
            headers: ["content-type": "application/json"],
            body: ByteBuffer(bytes: json))
    }

    private func metricsResponse() -> AdminResponse {
        beforeMetrics()
        return AdminResponse(
            status: .ok,
            headers: ["content-type": MetricsBootstrap.contentType],
            body: ByteBuffer(bytes: MetricsBootstrap.render(self.registry)))
    }

    private static func methodNotAllowed(allow: String) -> AdminResponse {
        var response = AdminResponse.text("method not allowed\n", status: .methodNotAllowed)
        response.headers.add(name: "allow", value: allow)
        return response
    }
}
