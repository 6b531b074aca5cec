import Foundation

/// Parses `AVIARY_<SERVICE>_ADDRESSES`: a comma-separated list of `host:port`, `[ipv6]:port`, or a
/// bare host (a DNS name that may resolve to several instances) that gets the service's default port.
enum ServiceAddresses {
    static func variable(for service: ServiceName) -> String {
        "AVIARY_\(service.environmentKeyPrefix)_ADDRESSES"
    }

    static func parse(_ raw: String, service: ServiceName) throws -> [String] {
        let key = variable(for: service)
        let addresses = ConfigurationValues.commaSeparated(raw).map { entry in normalize(entry, defaultPort: service.defaultRPCPort) }
        guard !addresses.isEmpty, !addresses.contains(nil) else {
            throw ConfigurationError(
                variable: key,
                message:
                    "\(key) must be a comma-separated list of host:port (port 1...65535) or host names, got '\(raw)'")
        }
        return addresses.compactMap { $0 }
    }

    /// Returns `host:port`, or nil when the entry is not a plausible address.
    private static func normalize(_ entry: String, defaultPort: Int) -> String? {
        let host: Substring
        let port: Substring?
        if entry.hasPrefix("[") {
            guard let close = entry.firstIndex(of: "]") else { return nil }
            host = entry[...close]
            let rest = entry[entry.index(after: close)...]
            if rest.isEmpty {
                port = nil
            } else {
                guard rest.hasPrefix(":") else { return nil }
                port = rest.dropFirst()
            }
            guard host.count > 2 else { return nil }
        } else {
            // A second colon means an unbracketed IPv6 address, whose port cannot be told apart.
            let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return nil }
            host = parts[0]
            port = parts.count == 2 ? parts[1] : nil
            guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "@" })
            else { return nil }
        }
        if let port {
            guard let number = Int(port), (1...65535).contains(number) else { return nil }
            return "\(host):\(number)"
        }
        return "\(host):\(defaultPort)"
    }
}
