/// Finding a Sentinel-watched master: `SENTINEL get-master-addr-by-name` asked of each sentinel in
/// turn until one knows, then `ROLE` asked of the server named, which must say it is the master (a
/// sentinel may still name the old master for a moment after a failover). Both connection kinds
/// use it: the client's (``RedisChannelConnection``) and the subscriber's (``RedisConnection``).
enum SentinelLookup {
    /// The command that asks a sentinel for `master`'s address.
    static func addressQuery(_ master: String) -> [RedisArgument] {
        ["SENTINEL", "get-master-addr-by-name", RedisArgument(master)]
    }

    /// The address in a sentinel's reply: `[ip, port]`; nil when it does not know the master.
    static func address(in reply: RESPValue) -> RedisEndpoint? {
        guard let parts = reply.array, parts.count == 2, let host = parts[0].string, let port = parts[1].int,
            (1...65535).contains(port)
        else { return nil }
        return RedisEndpoint(host: host, port: port)
    }

    /// Whether a `ROLE` reply says `master`.
    static func isMaster(_ reply: RESPValue) -> Bool {
        reply.array?.first?.string == "master"
    }

    /// The configuration for asking sentinel `endpoint`: its address, no credentials (those are the
    /// master's), no database.
    static func sentinel(_ endpoint: RedisEndpoint, of configuration: RedisConfiguration) -> RedisConfiguration {
        var sentinel = configuration.server(at: endpoint)
        sentinel.username = nil
        sentinel.password = nil
        sentinel.database = 0
        return sentinel
    }

    static func notFound(_ master: String, _ failures: [String]) -> RedisError {
        RedisError(
            .connectionFailed,
            detail: "no sentinel named a reachable master \(master): " + failures.joined(separator: "; "))
    }
}
