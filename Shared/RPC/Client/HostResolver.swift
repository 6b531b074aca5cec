import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Name resolution for ``RPCClient``: every IPv4 and IPv6 address a host name has, as DNS (or
/// `/etc/hosts`) gives them. `getaddrinfo` blocks, so it runs on NIO's thread pool, never on an
/// event loop or the cooperative pool.
public enum HostResolver {
    public static func addresses(of host: String) async throws -> [String] {
        try await NIOThreadPool.singleton.runIfActive {
            try lookup(host)
        }
    }

    private static func lookup(_ host: String) throws -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            throw HostResolutionError(host: host, message: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let family = entry.pointee.ai_family
            if let address = entry.pointee.ai_addr {
                if family == AF_INET {
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                        var raw = ipv4.pointee.sin_addr
                        _ = inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count))
                    }
                } else if family == AF_INET6 {
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                        var raw = ipv6.pointee.sin6_addr
                        _ = inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count))
                    }
                }
            }
            let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !text.isEmpty && !addresses.contains(text) { addresses.append(text) }
            cursor = entry.pointee.ai_next
        }
        return addresses
    }
}

/// A host name that did not resolve.
public struct HostResolutionError: Error, CustomStringConvertible {
    public var host: String
    public var message: String

    public init(host: String, message: String) {
        self.host = host
        self.message = message
    }

    public var description: String { "could not resolve \(host): \(message)" }
}
