import Foundation
import ServiceKit

/// The gateway's own configuration, read from `AVIARY_GATEWAY_*`.
struct GatewaySettings: Sendable {
    /// `AVIARY_GATEWAY_PORT`: the public HTTP and WebSocket port, on `AVIARY_HOST`. Default 8080.
    var port: Int
    /// `AVIARY_GATEWAY_TRUSTED_PROXIES`: addresses and CIDR ranges whose forwarding headers are believed.
    var trustedProxies: TrustedProxies
    /// `AVIARY_GATEWAY_MAX_BODY_BYTES`: the largest `POST /rpc` body. Default 1 MiB.
    var maxBodyBytes: Int
    /// `AVIARY_GATEWAY_MAX_UPLOAD_BYTES`: the largest `POST /media` body. Default 100 MiB.
    var maxUploadBytes: Int
    /// `AVIARY_GATEWAY_MAX_MESSAGE_BYTES`: the largest WebSocket message. Default 1 MiB.
    var maxMessageBytes: Int
    /// `AVIARY_GATEWAY_MAX_HEADER_BYTES`: all request headers together. Default 16 KiB.
    var maxHeaderBytes: Int
    /// `AVIARY_GATEWAY_IDLE_TIMEOUT_SECONDS`: an HTTP connection idle this long is closed. Default 60 s.
    var idleTimeout: Duration
    /// `AVIARY_GATEWAY_REQUEST_TIMEOUT_SECONDS`: a request body must have arrived within this. Default 30 s.
    var requestTimeout: Duration
    /// `AVIARY_GATEWAY_SOCKETS_PER_USER`: WebSockets one user may hold on one instance. Default 8.
    var socketsPerUser: Int
    /// `AVIARY_GATEWAY_SOCKETS_PER_ADDRESS`: WebSockets one client address may hold on one instance,
    /// signed in or not. Default 1000.
    var socketsPerAddress: Int
    /// `AVIARY_GATEWAY_CALLS_PER_ADDRESS_PER_MINUTE`: calls one client address may make. Default 6000.
    var callsPerAddressPerMinute: Int
    /// `AVIARY_GATEWAY_CALLS_PER_USER_PER_MINUTE`: calls one user may make. Default 3000.
    var callsPerUserPerMinute: Int
    /// `AVIARY_GATEWAY_CORS_ORIGINS`: origins browsers may call from (`https://app.example`); none by default.
    var corsOrigins: Set<String>
    /// `AVIARY_GATEWAY_TLS_CERT` and `AVIARY_GATEWAY_TLS_KEY`: PEM files; both or neither.
    var tls: (certificate: String, key: String)?
    /// `AVIARY_MEDIA_PUBLIC_URL`: where `GET /media/<id>` is sent on (the media service's URL).
    var mediaPublicURL: String
    /// `AVIARY_GATEWAY_DSB_COMPAT=1`: serve DeathStarBench's HTTP API (``DSBAdapter``). It acts for
    /// users without their tokens, so it is refused unless the gateway listens on loopback or
    /// `AVIARY_GATEWAY_DSB_COMPAT_ALLOW_REMOTE=1`.
    var dsbCompat: Bool
    /// `AVIARY_GATEWAY_MASTODON_REGISTRATIONS=1`: `POST /api/v1/accounts` registers accounts
    /// through the Mastodon API (an app's token, `write:accounts`). Off by default.
    var mastodonRegistrations: Bool
    /// `AVIARY_GATEWAY_PUBLIC_URL`: the gateway's URL as apps reach it (`https://aviary.example`),
    /// for the links the Mastodon API writes (pages, profiles, `Link`); unset, the request's
    /// `Host` with `https` when the gateway serves TLS, else `http`.
    var publicURL: String?

    /// WebSocket calls of one socket in flight at once; the socket is not read while this many run.
    static let callsInFlightPerSocket = 64
    /// The longest a call may take through the gateway (`_meta.timeoutMs` is capped to it).
    static let callTimeout = Duration.seconds(10)

    init(configuration: ServiceConfiguration) throws {
        port = try configuration.integer("AVIARY_GATEWAY_PORT", default: 8080, in: 0...65535)
        trustedProxies = try TrustedProxies(
            parsing: configuration.value("AVIARY_GATEWAY_TRUSTED_PROXIES") ?? "", variable: "AVIARY_GATEWAY_TRUSTED_PROXIES")
        maxBodyBytes = try configuration.integer("AVIARY_GATEWAY_MAX_BODY_BYTES", default: 1 << 20, in: 1024...(64 << 20))
        maxUploadBytes = try configuration.integer(
            "AVIARY_GATEWAY_MAX_UPLOAD_BYTES", default: 100 << 20, in: 1024...(1 << 40))
        maxMessageBytes = try configuration.integer(
            "AVIARY_GATEWAY_MAX_MESSAGE_BYTES", default: 1 << 20, in: 1024...(64 << 20))
        maxHeaderBytes = try configuration.integer("AVIARY_GATEWAY_MAX_HEADER_BYTES", default: 16 << 10, in: 1024...(1 << 20))
        idleTimeout = .seconds(try configuration.integer("AVIARY_GATEWAY_IDLE_TIMEOUT_SECONDS", default: 60, in: 1...86_400))
        requestTimeout = .seconds(
            try configuration.integer("AVIARY_GATEWAY_REQUEST_TIMEOUT_SECONDS", default: 30, in: 1...86_400))
        socketsPerUser = try configuration.integer("AVIARY_GATEWAY_SOCKETS_PER_USER", default: 8, in: 1...10_000)
        socketsPerAddress = try configuration.integer("AVIARY_GATEWAY_SOCKETS_PER_ADDRESS", default: 1000, in: 1...1_000_000)
        callsPerAddressPerMinute = try configuration.integer(
            "AVIARY_GATEWAY_CALLS_PER_ADDRESS_PER_MINUTE", default: 6000, in: 1...100_000_000)
        callsPerUserPerMinute = try configuration.integer(
            "AVIARY_GATEWAY_CALLS_PER_USER_PER_MINUTE", default: 3000, in: 1...100_000_000)
        corsOrigins = Set(
            (configuration.value("AVIARY_GATEWAY_CORS_ORIGINS") ?? "").split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        switch (configuration.value("AVIARY_GATEWAY_TLS_CERT"), configuration.value("AVIARY_GATEWAY_TLS_KEY")) {
        case (nil, nil): tls = nil
        case (let certificate?, let key?): tls = (certificate, key)
        case (nil, _):
            throw ConfigurationError(
                variable: "AVIARY_GATEWAY_TLS_CERT", message: "AVIARY_GATEWAY_TLS_KEY is set: set AVIARY_GATEWAY_TLS_CERT too")
        case (_, nil):
            throw ConfigurationError(
                variable: "AVIARY_GATEWAY_TLS_KEY", message: "AVIARY_GATEWAY_TLS_CERT is set: set AVIARY_GATEWAY_TLS_KEY too")
        }
        var mediaURL = configuration.value("AVIARY_MEDIA_PUBLIC_URL") ?? "http://127.0.0.1:7207"
        while mediaURL.hasSuffix("/") { mediaURL.removeLast() }
        mediaPublicURL = mediaURL
        dsbCompat = try configuration.integer("AVIARY_GATEWAY_DSB_COMPAT", default: 0, in: 0...1) == 1
        mastodonRegistrations = try configuration.integer("AVIARY_GATEWAY_MASTODON_REGISTRATIONS", default: 0, in: 0...1) == 1
        publicURL = try configuration.value("AVIARY_GATEWAY_PUBLIC_URL").map { given in
            var url = given
            while url.hasSuffix("/") { url.removeLast() }
            guard let parsed = URLComponents(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host?.isEmpty == false,
                parsed.path.isEmpty, parsed.query == nil
            else {
                throw ConfigurationError(
                    variable: "AVIARY_GATEWAY_PUBLIC_URL", message: "AVIARY_GATEWAY_PUBLIC_URL must be http(s)://host[:port] without a path")
            }
            return url
        }
        let remote = try configuration.integer("AVIARY_GATEWAY_DSB_COMPAT_ALLOW_REMOTE", default: 0, in: 0...1) == 1
        let host = configuration.host
        let loopback = host == "localhost" || host == "::1" || host.hasPrefix("127.")
        if dsbCompat, !loopback, !remote {
            throw ConfigurationError(
                variable: "AVIARY_GATEWAY_DSB_COMPAT",
                message: """
                    AVIARY_GATEWAY_DSB_COMPAT acts for DeathStarBench's users without tokens: it is refused unless AVIARY_HOST \
                    is a loopback address (it is \(host)) or AVIARY_GATEWAY_DSB_COMPAT_ALLOW_REMOTE=1
                    """)
        }
    }
}
