import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import RPC
import ServiceKit

/// A subscription's endpoint, checked: `https` (or `http` where private endpoints are allowed), a
/// host, no user, at most 2,048 characters.
struct PushEndpoint: Sendable, Equatable {
    let url: String
    let host: String
    let port: Int
    let tls: Bool
    /// The path and query the POST goes to.
    let target: String

    static let maxLength = 2048

    init(_ url: String, allowPrivate: Bool) throws(RPCError) {
        guard url.count <= Self.maxLength, let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "https" || (scheme == "http" && allowPrivate), let host = components.host, !host.isEmpty,
            components.user == nil, components.password == nil
        else {
            throw RPCError.validation(
                "endpoint must be an https URL of at most \(Self.maxLength) characters, with a host and no user", field: "endpoint")
        }
        self.url = url
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        // An address given as such is checked now; a name, when a push resolves it.
        if !allowPrivate, let address = try? SocketAddress(ipAddress: self.host, port: 0), PushSender.isInternal(address) {
            throw RPCError.validation("endpoint must not be a loopback, private or otherwise internal address", field: "endpoint")
        }
        tls = scheme == "https"
        port = components.port ?? (tls ? 443 : 80)
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        target = path + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
    }

    /// The origin a VAPID token names (`aud`).
    var origin: String {
        let scheme = tls ? "https" : "http"
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return port == (tls ? 443 : 80) ? "\(scheme)://\(shownHost)" : "\(scheme)://\(shownHost):\(port)"
    }
}

/// POSTs one push to its endpoint over HTTP/1.1, TLS checked against the system's roots. The
/// host is resolved here and the address checked before connecting: unless private endpoints are
/// allowed (`AVIARY_PUSH_ALLOW_PRIVATE_ENDPOINTS`), no push goes to a loopback, private,
/// link-local or otherwise internal address, whatever name a subscriber gave. No redirect is
/// followed.
struct PushSender: Sendable {
    let allowPrivate: Bool
    let tls: NIOSSLContext
    static let timeout = Duration.seconds(10)

    init(allowPrivate: Bool) throws {
        self.allowPrivate = allowPrivate
        tls = try NIOSSLContext(configuration: .makeClientConfiguration())
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The response's status code.
    func post(_ endpoint: PushEndpoint, body: Data, headers: [(String, String)]) async throws -> Int {
        try await withTimeLimit(Self.timeout, expired: { Failure(description: "the push service did not answer within \(Self.timeout)") }) {
            try await self.send(endpoint, body: body, headers: headers)
        }
    }

    private func send(_ endpoint: PushEndpoint, body: Data, headers: [(String, String)]) async throws -> Int {
        let address = try await NIOThreadPool.singleton.runIfActive {
            try SocketAddress.makeAddressResolvingHost(endpoint.host, port: endpoint.port)
        }
        if !allowPrivate, Self.isInternal(address) {
            throw Failure(description: "\(endpoint.host) resolves to an internal address (\(address)); no push goes there")
        }
        let (tls, serverName) = (endpoint.tls ? self.tls : nil, Self.isAddressLiteral(endpoint.host) ? nil : endpoint.host)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .connect(to: address) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: serverName)) }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: endpoint.target)
            head.headers.add(name: "Host", value: endpoint.port == (endpoint.tls ? 443 : 80) ? endpoint.host : "\(endpoint.host):\(endpoint.port)")
            head.headers.add(name: "Content-Type", value: "application/octet-stream")
            head.headers.add(name: "Content-Length", value: String(body.count))
            head.headers.add(name: "TTL", value: "86400")
            head.headers.add(name: "Connection", value: "close")
            for (name, value) in headers { head.headers.add(name: name, value: value) }
            try await outbound.write(.head(head))
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
            try await outbound.write(.end(nil))
            for try await part in inbound {
                if case .head(let response) = part { return Int(response.status.code) }
            }
            throw Failure(description: "the push service closed the connection before answering")
        }
    }

    private static func isAddressLiteral(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }

    /// Loopback, private (RFC 1918, unique local), link-local, shared (100.64/10), unspecified,
    /// multicast or reserved: anything but the public internet.
    static func isInternal(_ address: SocketAddress) -> Bool {
        switch address {
        case .v4(let v4):
            let value = UInt32(bigEndian: v4.address.sin_addr.s_addr)
            return isInternal(v4: value)
        case .v6(let v6):
            var storage = v6.address.sin6_addr
            let bytes = withUnsafeBytes(of: &storage) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
                return isInternal(v4: bytes[12...].reduce(0) { $0 << 8 | UInt32($1) })  // ::ffff:a.b.c.d
            }
            let unspecifiedOrLoopback = bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] <= 1
            return unspecifiedOrLoopback || bytes[0] & 0xfe == 0xfc || (bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80) || bytes[0] == 0xff
        case .unixDomainSocket:
            return true
        }
    }

    private static func isInternal(v4 value: UInt32) -> Bool {
        let ranges: [(UInt32, Int)] = [
            (0x0000_0000, 8), (0x0A00_0000, 8), (0x6440_0000, 10), (0x7F00_0000, 8), (0xA9FE_0000, 16), (0xAC10_0000, 12),
            (0xC000_0000, 24), (0xC0A8_0000, 16), (0xC612_0000, 15), (0xE000_0000, 3),
        ]
        return ranges.contains { base, bits in value >> (32 - bits) == base >> (32 - bits) }
    }
}
