import AuthTokens
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Locking
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import RPC
import ServiceKit
import ServiceLifecycle

/// The public edge: one HTTP and WebSocket front door for apps (`aviary-gateway`). It runs on the
/// services' runtime (configuration, logs, metrics, admin port, shutdown), and its public port is a
/// Hummingbird application run next to the runtime's own servers.
public final class GatewayService: Sendable {
    let settings: GatewaySettings
    let resources: ServiceResources
    let directory: MethodDirectory
    let forwarder: Forwarder
    let limits: EdgeLimits
    let socketsPerUser: SocketRegistry<Int64>
    let socketsPerAddress: SocketRegistry<String>
    let liveChannels: LiveChannels
    /// The Mastodon API's apps and tokens, for its endpoints and its streaming sockets.
    let mastodonTokens: MastodonTokens
    let openSockets = OpenSockets()
    /// The public port once it listens, for readiness and the log.
    let listening = Locked<Int?>(nil)

    init(settings: GatewaySettings, resources: ServiceResources) {
        self.settings = settings
        self.resources = resources
        directory = MethodDirectory(resources: resources)
        forwarder = Forwarder(directory: directory, resources: resources)
        limits = EdgeLimits(limiter: RateLimiter(redis: resources.redis, logger: resources.logger), settings: settings)
        socketsPerUser = SocketRegistry(limit: settings.socketsPerUser)
        socketsPerAddress = SocketRegistry(limit: settings.socketsPerAddress)
        liveChannels = LiveChannels(resources: resources)
        mastodonTokens = MastodonTokens(postgres: resources.postgres, forwarder: forwarder)
    }

    /// The gateway's part of start-up: its public port joins the service group.
    static func register(_ router: inout RPCRouter, _ resources: ServiceResources) async throws {
        let gateway = GatewayService(settings: try GatewaySettings(configuration: resources.configuration), resources: resources)
        resources.addBackgroundService(try gateway.application())
        resources.addBackgroundService(SocketFarewell(sockets: gateway.openSockets))
        resources.addReadinessCheck("http") { gateway.listening.withLock { $0 != nil } }
    }

    /// The caller a request is made for: its token (`Authorization: Bearer …`) and its address.
    func caller(of request: Request, peer: String?) -> EdgeCaller {
        caller(
            authorization: request.headers[.authorization], peer: peer,
            forwardedFor: { request.headers[values: Self.forwardedForHeader] }, forwarded: { request.headers[values: Self.forwardedHeader] })
    }

    /// The caller of a WebSocket upgrade's request, as NIO's upgrader hands it over.
    func caller(of head: HTTPRequestHead, peer: String?) -> EdgeCaller {
        caller(
            authorization: head.headers.first(name: "Authorization"), peer: peer,
            forwardedFor: { head.headers[Self.forwardedForHeader.rawName] }, forwarded: { head.headers[Self.forwardedHeader.rawName] })
    }

    /// The forwarding headers are read only when `peer` is a trusted proxy.
    private func caller(
        authorization: String?, peer: String?, forwardedFor: () -> [String], forwarded: () -> [String]
    ) -> EdgeCaller {
        let proxies = settings.trustedProxies
        let address =
            if let peer, proxies.contains(peer) {
                proxies.clientAddress(peer: peer, forwardedFor: forwardedFor(), forwarded: forwarded())
            } else {
                peer
            }
        return EdgeCaller(token: authorization.flatMap(Self.bearerToken), address: address)
    }

    /// The token of an `Authorization: Bearer <token>` value (the scheme in any case); read on
    /// every call, so without copying the token to compare or trim it.
    static func bearerToken(_ authorization: String) -> String? {
        let bytes = authorization.utf8
        guard bytes.count > 7, bytes.prefix(7).map({ $0 | 0x20 }).elementsEqual("bearer ".utf8) else { return nil }
        let token = bytes.dropFirst(7).drop { $0 == 0x20 }
        let end = token.lastIndex { $0 != 0x20 }
        guard let end else { return nil }
        return String(authorization[token.startIndex...end])
    }

    /// The user of a token the gateway can verify now; nil otherwise (the services then answer for it).
    func user(of token: String?) async -> Int64? {
        guard let token else { return nil }
        return try? await resources.tokenVerifier.verify(token).userID
    }

    /// `scheme://host[:port]` of the gateway as apps reach it: ``GatewaySettings/publicURL``, or
    /// the request's `Host` (https when the gateway serves TLS).
    func publicOrigin(host: String?) -> String {
        settings.publicURL ?? "\(settings.tls == nil ? "http" : "https")://\(host ?? "localhost")"
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
        try MastodonAPI(gateway: self).addRoutes(to: router)
        router.get("openapi.json") { _, _ in EdgeResponses.json(OpenAPIDocument.document) }

        let http1 = HTTP1Channel.Configuration(
            idleTimeout: .seconds(Int64(settings.idleTimeout.components.seconds)),
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: settings.maxHeaderBytes, maxHeaderListSize: settings.maxHeaderBytes, maxHeaderFieldCount: 100))
        let tls = try settings.tls.map { tls in
            let certificates = try NIOSSLCertificate.fromPEMFile(tls.certificate).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(file: tls.key, format: .pem)
            return TLSConfiguration.makeServerConfiguration(certificateChain: certificates, privateKey: .privateKey(key))
        }
        let server = HTTPServerBuilder { responder in
            let plain = EdgeChannel(responder: responder, gateway: self, http1: http1)
            if let tls { return OnLoopChildChannel(base: try TLSChannel(plain, tlsConfiguration: tls)) }
            return OnLoopChildChannel(base: plain)
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

/// Runs each connection's task with the connection's event loop as its executor, as the services
/// run their calls: the request's work, the calls it makes to the services (whose connections are
/// picked on the same loop) and its answer share one thread instead of hopping to Swift's global
/// pool and back at every await.
/// Nothing a connection's task runs may block; the media routes leave the loop for their files.
struct OnLoopChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopTaskExecutor(eventLoop: value.channel.eventLoop)) {
            await base.handle(value: value, logger: logger)
        }
    }
}

/// Closes the open WebSockets when the gateway shuts down (1001, going away), so that apps
/// reconnect at once, to another instance, rather than find out from their next ping.
struct SocketFarewell: Service {
    let sockets: OpenSockets

    func run() async throws {
        try? await gracefulShutdown()
        sockets.closeAll()
    }
}
