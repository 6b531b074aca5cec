import Foundation
import ServiceKit

/// The reverse proxies whose forwarding headers the gateway believes
/// (`AVIARY_GATEWAY_TRUSTED_PROXIES`: IP addresses and CIDR ranges, IPv4 or IPv6).
struct TrustedProxies: Sendable {
    private struct Range: Sendable {
        var network: [UInt8]
        var prefixLength: Int

        func contains(_ address: [UInt8]) -> Bool {
            var left = prefixLength
            for index in 0..<16 where left > 0 {
                let bits = min(8, left)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if address[index] & mask != network[index] & mask { return false }
                left -= bits
            }
            return true
        }
    }

    private let ranges: [Range]

    init(parsing raw: String, variable: String) throws {
        var ranges: [Range] = []
        for entry in raw.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: "/", maxSplits: 1).map(String.init)
            guard let address = Self.bytes(of: parts[0]) else {
                throw ConfigurationError(variable: variable, message: "\(variable): '\(entry)' is not an IP address or CIDR range")
            }
            let isV4 = !parts[0].contains(":")
            var length = 128
            if parts.count == 2 {
                guard let given = Int(parts[1]), given >= 0, given <= (isV4 ? 32 : 128) else {
                    throw ConfigurationError(variable: variable, message: "\(variable): '\(entry)' has an invalid prefix length")
                }
                length = isV4 ? 96 + given : given
            }
            ranges.append(Range(network: address, prefixLength: length))
        }
        self.ranges = ranges
    }

    func contains(_ address: String) -> Bool {
        guard !ranges.isEmpty, let bytes = Self.bytes(of: address) else { return false }
        return ranges.contains { $0.contains(bytes) }
    }

    /// The client's address: the socket's peer, unless that peer is a trusted proxy; then the
    /// nearest address in `X-Forwarded-For` (or `Forwarded: for=`) that is not itself a trusted
    /// proxy. A client can put anything at the start of those headers, so they are read from the
    /// end, and only as far as trusted proxies vouch for them.
    func clientAddress(peer: String, forwardedFor: [String], forwarded: [String]) -> String {
        guard contains(peer) else { return peer }
        var chain = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        if chain.isEmpty {
            chain = forwarded.flatMap { $0.split(separator: ",") }.compactMap { Self.forParameter(of: String($0)) }
        }
        var address = peer
        for hop in chain.reversed() {
            guard Self.bytes(of: hop) != nil else { break }
            address = hop
            if !contains(hop) { break }
        }
        return address
    }

    /// The `for=` of one `Forwarded` element (RFC 7239), without quotes, brackets or port.
    private static func forParameter(of element: String) -> String? {
        for pair in element.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, parts[0].lowercased() == "for" else { continue }
            var value = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            if value.hasPrefix("["), let close = value.firstIndex(of: "]") {
                value = String(value[value.index(after: value.startIndex)..<close])
            } else if value.filter({ $0 == ":" }).count == 1, let colon = value.firstIndex(of: ":") {
                value = String(value[..<colon])
            }
            return value
        }
        return nil
    }

    /// 16 bytes of an IPv6 address, or of an IPv4 address mapped into IPv6 (`::ffff:a.b.c.d`).
    static func bytes(of text: String) -> [UInt8]? {
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return Array(repeating: 0, count: 10) + [0xFF, 0xFF] + withUnsafeBytes(of: &v4) { Array($0) }
        }
        return nil
    }
}
