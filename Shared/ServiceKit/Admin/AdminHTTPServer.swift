import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import RPC
import ServiceLifecycle

/// The admin HTTP/1.1 server of a service: `GET /healthz` (liveness, always `ok`), `GET /readyz`
/// (the readiness checks as JSON, 200 when all pass, 503 otherwise), `GET /metrics` (Prometheus
/// text), and any ``AdminRoute`` the service adds.
///
/// It is a `Service`: run it in the process's `ServiceGroup`. On graceful shutdown it stops
/// accepting, closes idle connections at once, and closes busy ones after their current response.
/// Request headers over 64 KiB are refused with 400; request bodies are read and dropped.
public actor AdminHTTPServer: Service {
    /// Returns named readiness checks, e.g. `["postgres": true, "redis": false]`.
    public typealias ReadinessCheck = @Sendable () async -> [String: Bool]

    /// The largest request head (request line and header fields) accepted.
    public static let maxHeaderBytes = 64 * 1024

    private enum State {
        case idle
        case listening(port: Int)
        case finished((any Error)?)
    }

    private let host: String
    private let port: Int
    private let eventLoopGroup: any EventLoopGroup
    private let responder: AdminResponder
    private let connections = AdminConnections()
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
    ///   - routes: the service's extra endpoints.
    ///   - connectionLimit: shared with the process's other listeners: a connection over it is
    ///     answered 503 and closed.
    public init(
        host: String,
        port: Int,
        registry: PrometheusCollectorRegistry,
        beforeMetrics: @escaping @Sendable () -> Void = {},
        readiness: @escaping ReadinessCheck = { [:] },
        routes: [AdminRoute] = [],
        connectionLimit: ConnectionLimit? = nil,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) {
        self.host = host
        self.port = port
        self.connectionLimit = connectionLimit
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.responder = AdminResponder(
            registry: registry, beforeMetrics: beforeMetrics, readiness: readiness, routes: routes, logger: logger)
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
        let serverChannel: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
        do {
            serverChannel = try await self.bind()
        } catch {
            self.finish(error)
            throw error
        }
        let port = serverChannel.channel.localAddress?.port ?? self.port
        self.state = .listening(port: port)
        for waiter in self.portWaiters { waiter.resume(returning: port) }
        self.portWaiters = []
        defer { self.finish(nil) }

        let connections = self.connections
        let responder = self.responder
        let logger = self.logger
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await serverChannel.executeThenClose { inbound in
                    for try await connection in inbound {
                        group.addTask {
                            await AdminConnection(
                                channel: connection, responder: responder, connections: connections, logger: logger
                            ).serve()
                        }
                    }
                }
            }
        } onGracefulShutdown: {
            connections.quiesce(serverChannel: serverChannel.channel)
        }
    }

    private func bind() async throws
        -> NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
    {
        let limits = Self.decoderLimits
        let connectionLimit = self.connectionLimit
        return try await ServerBootstrap(group: self.eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: self.host, port: self.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    // Refused: the refusal reads nothing, so the HTTP handlers behind it never see a request.
                    if let connectionLimit, !connectionLimit.admit(channel) {
                        try pipeline.addHandler(RefusingHandler(sending: Self.refusal(connectionLimit.refusal)))
                    }
                    try pipeline.addHandler(IdleStateHandler(allTimeout: AdminConnection.idleTimeout))
                    try pipeline.configureHTTPServerPipeline(
                        withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
                    try pipeline.addHandler(CloseOnIdleHandler())
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                        wrappingChannelSynchronously: channel)
                }
            }
    }

    /// A 503 response that closes the connection, with `reason` as its text.
    private static func refusal(_ reason: String) -> [UInt8] {
        let body = reason + "\n"
        return Array(
            ("HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
                + "content-length: \(body.utf8.count)\r\nconnection: close\r\n\r\n" + body).utf8)
    }

    private static var decoderLimits: NIOHTTPDecoderLimitConfiguration {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = Self.maxHeaderBytes
        limits.maxHeaderListSize = Self.maxHeaderBytes
        return limits
    }

    private func finish(_ error: (any Error)?) {
        if case .finished = self.state { return }
        self.state = .finished(error)
        let failure = error ?? AdminHTTPServerError(message: "the admin server has stopped")
        for waiter in self.portWaiters { waiter.resume(throwing: failure) }
        self.portWaiters = []
    }
}

/// The admin server stopped before it listened, or is asked for its port after stopping.
public struct AdminHTTPServerError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { self.message }
}
