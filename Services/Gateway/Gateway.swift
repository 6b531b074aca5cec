import AuthTokens
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOSSL
import RPC
import ServiceKit
import ServiceLifecycle
import Synchronization

/// The public edge: one HTTP and WebSocket front door for apps (`aviary-gateway`). It runs on the
/// services' runtime (configuration, logs, metrics, admin port, shutdown), and its public port is a
/// Hummingbird application run next to the runtime's own servers.
final class Gateway: Sendable {
    let settings: GatewaySettings
    let resources: ServiceResources
    let directory: MethodDirectory
    let forwarder: Forwarder
    let limits: EdgeLimits
    let sockets: SocketRegistry
    let liveChannels: LiveChannels
    /// The public port once it listens, for readiness and the log.
    let listening = Mutex<Int?>(nil)

    init(settings: GatewaySettings, resources: ServiceResources) {
        self.settings = settings
        self.resources = resources
        directory = MethodDirectory(resources: resources)
        forwarder = Forwarder(directory: directory, resources: resources)
        limits = EdgeLimits(
            limiter: RateLimiter(redis: resources.redis, logger: resources.logger), settings: settings, logger: resources.logger)
        sockets = SocketRegistry(limitPerUser: settings.socketsPerUser)
        liveChannels = LiveChannels(resources: resources)
    }

    /// The gateway's part of start-up: its public port joins the service group.
    static func register(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        let gateway = Gateway(settings: try GatewaySettings(configuration: resources.configuration), resources: resources)
        resources.addBackgroundService(try gateway.application())
        resources.addReadinessCheck("http") { gateway.listening.withLock { $0 != nil } }
    }

    /// The caller a request is made for: its token (`Authorization: Bearer …`) and its address.
    func caller(of request: Request, peer: String?) -> EdgeCaller {
        var token: String?
        if let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") {
            let value = authorization.dropFirst(7).trimmingCharacters(in: .whitespaces)
            token = value.isEmpty ? nil : value
        }
        let address = settings.trustedProxies.clientAddress(
            peer: peer, forwardedFor: request.headers[values: Self.forwardedForHeader],
            forwarded: request.headers[values: Self.forwardedHeader])
        return EdgeCaller(token: token, address: address)
    }

    /// The user of a token the gateway can verify now; nil otherwise (the services then answer for it).
    func user(of token: String?) async -> Int64? {
        guard let token else { return nil }
        return try? await resources.tokenVerifier.verify(token).userID
    }

    static let forwardedForHeader = HTTPField.Name("X-Forwarded-For")!
    static let forwardedHeader = HTTPField.Name("Forwarded")!

    private func application() throws -> some Service {
        let router = Router(context: EdgeContext.self)
        router.add(middleware: EdgeHeadersMiddleware(corsOrigins: settings.corsOrigins, tls: settings.tls != nil))
        addRPCRoutes(to: router)
        addMediaRoutes(to: router)
        if settings.dsbCompat {
            DSBAdapter(gateway: self, accounts: DSBAccounts(postgres: resources.postgres, forwarder: forwarder)).addRoutes(to: router)
        }
        router.get("openapi.json") { _, _ in EdgeResponses.json(OpenAPIDocument.document) }

        var http1 = HTTP1Channel.Configuration(idleTimeout: .seconds(Int64(settings.idleTimeout.components.seconds)))
        http1.httpDecoder = .init(
            maxHeaderFieldSize: settings.maxHeaderBytes, maxHeaderListSize: settings.maxHeaderBytes, maxHeaderFieldCount: 100)
        let webSocket = WebSocketServerConfiguration(
            maxFrameSize: settings.maxMessageBytes, autoPing: .enabled(timePeriod: .seconds(30)), closeTimeout: .seconds(5),
            validateUTF8: true)
        var server = HTTPServerBuilder.http1WebSocketUpgrade(
            webSocketRouter: router, configuration: .init(http1: http1, ws: webSocket))
        if let tls = settings.tls {
            let certificates = try NIOSSLCertificate.fromPEMFile(tls.certificate).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(file: tls.key, format: .pem)
            server = try .tls(
                server, tlsConfiguration: .makeServerConfiguration(certificateChain: certificates, privateKey: .privateKey(key)))
        }
        let host = resources.configuration.host
        let logger = resources.logger
        return Application(
            router: router, server: server,
            configuration: .init(address: .hostname(host, port: settings.port), serverName: nil),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                self.listening.withLock { $0 = port }
                logger.info("ready http=\(host):\(port)")
            },
            logger: logger)
    }
}
