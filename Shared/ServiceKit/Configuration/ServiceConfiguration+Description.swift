import Foundation

extension ServiceConfiguration: CustomStringConvertible {
    /// One line for the start-up log; passwords in URLs and the service secret are masked.
    public var description: String {
        let secret = self.serviceSecret == nil ? "generated" : "<set>"
        return "service=\(self.service) host=\(self.host) rpcPort=\(self.rpcPort) adminPort=\(self.adminPort) "
            + "postgres=\(Self.maskingPassword(self.postgresURL)) postgresPoolSize=\(self.postgresPoolSize) "
            + "postgresStatementTimeout=\(self.postgresStatementTimeout) "
            + "postgresPrepared=\(self.postgresPrepared ? "on" : "off") "
            + "redis=\(Self.maskingPassword(self.redisURL)) redisPoolSize=\(self.redisPoolSize) redisReplicaAcks=\(self.redisReplicaAcknowledgements) "
            + "nodeID=\(self.nodeID.map(String.init) ?? "leased") serviceSecret=\(secret) "
            + "acceptedServiceSecrets=\(self.acceptedServiceSecrets.count) logLevel=\(self.logLevel) "
            + "logFormat=\(self.logFormat) maxFrameBytes=\(self.maxFrameBytes) maxConnections=\(self.maxConnections) "
            + "eventLoops=\(self.eventLoops)"
    }

    /// Replaces the password of `scheme://user:password@host` (or `scheme://:password@host`) with `***`.
    static func maskingPassword(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let authority = url[schemeEnd.upperBound...].prefix(while: { $0 != "/" })
        guard let at = authority.lastIndex(of: "@"),
            let colon = authority[..<at].firstIndex(of: ":")
        else { return url }
        return url[..<url.index(after: colon)] + "***" + url[at...]
    }
}
