import Foundation
import Logging
import NIOCore
import RPC
import Redis

/// Everything a service reads from its environment (and the optional `AVIARY_CONFIG_FILE`), typed,
/// validated, and defaulted so that an executable started with no configuration runs on one machine.
///
/// Build it with ``load(service:environment:)``; tests pass their own `environment` dictionary
/// (for example `["AVIARY_RPC_PORT": "0", "AVIARY_ADMIN_PORT": "0"]`).
public struct ServiceConfiguration: Sendable {
    /// The service this configuration was loaded for.
    public var service: ServiceName
    /// `AVIARY_POSTGRES_URL`: a libpq connection URI. Default `postgres://aviary@127.0.0.1:5432/aviary`.
    public var postgresURL: String
    /// `AVIARY_POSTGRES_POOL_SIZE`: connections to Postgres, 1…1024. Default 8.
    public var postgresPoolSize: Int
    /// `AVIARY_POSTGRES_STATEMENT_TIMEOUT_MS`: the longest a statement waits for its answer before
    /// its connection is abandoned, 100…3,600,000 ms (migrations are not timed). Default 10,000.
    public var postgresStatementTimeout: Duration
    /// `AVIARY_POSTGRES_PREPARED`: on, or off when `AVIARY_POSTGRES_URL` is a pooler in transaction
    /// mode (PgBouncer): statements then go unnamed and no session settings are sent
    /// (`PostgresConfiguration.Options.transactionPooling`). Default on.
    public var postgresPrepared: Bool
    /// `AVIARY_POSTGRES_REPLICA_URLS`: streaming replicas of `AVIARY_POSTGRES_URL`'s server
    /// (comma-separated URLs) for the reads that tolerate a little lag (``ReplicaReads``). Default none.
    public var postgresReplicaURLs: [String]
    /// `AVIARY_POSTGRES_REPLICA_WINDOW_MS`: how long after a write its reads go to the primary, and
    /// how far behind a replica may be before it is left out, 100…60,000 ms. Default 2,000.
    public var postgresReplicaWindow: Duration
    /// `AVIARY_REDIS_URL`: `redis://[:password@]host:port[/db]`, or `unix://[:password@]/path[?db=N]`
    /// for a Unix socket, `redis+cluster://host:port,host:port` for a Redis Cluster (seed nodes), or
    /// `redis+sentinel://host:port,host:port/master` for a Sentinel-watched master. Default
    /// `redis://127.0.0.1:6379`.
    public var redisURL: String
    /// `AVIARY_REDIS_POOL_SIZE`: connections to Redis (to each node of a cluster), 1…1024. Default 8.
    public var redisPoolSize: Int
    /// `AVIARY_REDIS_REPLICA_ACKS`: how many replicas must have an event (`WAIT`) before the outbox
    /// relay lets its row go, 0…16, so that a failover loses no event; a batch without them stays in
    /// the outbox and is sent again. Default 1 for a cluster or Sentinel URL, 0 for one server.
    public var redisReplicaAcknowledgements: Int
    /// `AVIARY_HOST`: the address both listeners bind. Default `127.0.0.1`.
    public var host: String
    /// `AVIARY_RPC_PORT`: the JSON-RPC port, 0 for any free port. Default per service (7101…7107).
    public var rpcPort: Int
    /// `AVIARY_ADMIN_PORT`: the admin HTTP port, 0 for any free port. Default per service (7201…7207).
    public var adminPort: Int
    /// `AVIARY_NODE_ID`: 0…1023, the node bits of time-ordered ids; each process issuing ids at the
    /// same time needs its own. Unset (nil), the process leases a free one from Postgres (``NodeLease``).
    public var nodeID: Int?
    /// `AVIARY_SERVICE_SECRET`: the internal-call credential; nil when the services should share a
    /// generated one through the database.
    public var serviceSecret: String?
    /// `AVIARY_SERVICE_SECRETS_ACCEPTED`: more credentials accepted on incoming internal calls
    /// (comma-separated) besides `AVIARY_SERVICE_SECRET`, which alone is sent: the overlap that lets
    /// a rotation of the secret restart services one by one. Needs `AVIARY_SERVICE_SECRET`.
    public var acceptedServiceSecrets: [String]
    /// `AVIARY_LOG_LEVEL`: trace, debug, info, notice, warning, error or critical. Default info.
    public var logLevel: Logger.Level
    /// `AVIARY_LOG_FORMAT`: text or json. Default text.
    public var logFormat: LogFormat
    /// `AVIARY_MAX_FRAME_BYTES`: the longest JSON-RPC frame accepted, 1 KiB…1 GiB. Default 1 MiB (media 4 MiB).
    public var maxFrameBytes: Int
    /// `AVIARY_MAX_CONNECTIONS`: the client connections the RPC and admin ports hold at once together,
    /// 1…10,000,000; one more is answered `unavailable` (HTTP 503 on the admin port) and closed.
    /// Default ``ConnectionLimit/defaultLimit`` (the file descriptor limit less a tenth, at least 256).
    public var maxConnections: Int
    /// `AVIARY_EVENT_LOOPS`: the threads that serve calls (SwiftNIO event loops), 1…256. Default one
    /// per core, which suits a service with the machine to itself; services sharing a machine do
    /// better with fewer each (each wake-up of a thread is a context switch some other process waits behind).
    public var eventLoops: Int

    private var serviceAddresses: [ServiceName: [String]]
    private var values: ConfigurationValues

    /// The `host:port` addresses of another service: `AVIARY_<SERVICE>_ADDRESSES`, by default
    /// `127.0.0.1:<its default RPC port>`. A bare host name in the variable gets the default port.
    public func addresses(of service: ServiceName) -> [String] {
        self.serviceAddresses[service] ?? ["127.0.0.1:\(service.defaultRPCPort)"]
    }

    /// The raw value of any `AVIARY_…` variable (environment first, then the config file), for
    /// service-specific settings: `value("AVIARY_TIMELINE_CAPACITY")`. Nil when unset or empty.
    public func value(_ key: String) -> String? {
        self.values[key]
    }

    /// A service-specific integer setting, validated like the common ones.
    /// - Throws: ``ConfigurationError`` when the value is not an integer within `range`.
    public func integer(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        try self.values.integer(key, default: defaultValue, in: range)
    }
}

extension ServiceConfiguration {
    /// `AVIARY_SERVICE_SECRET`, unless it is still a template's placeholder.
    private static func serviceSecret(_ values: ConfigurationValues) throws -> String? {
        let variable = "AVIARY_SERVICE_SECRET"
        guard let secret = values[variable] else { return nil }
        try refusePlaceholder(secret, variable: variable)
        return secret
    }

    /// `AVIARY_SERVICE_SECRETS_ACCEPTED`, which only makes sense next to an explicit `AVIARY_SERVICE_SECRET`.
    private static func acceptedServiceSecrets(_ values: ConfigurationValues) throws -> [String] {
        let variable = "AVIARY_SERVICE_SECRETS_ACCEPTED"
        let accepted = ConfigurationValues.commaSeparated(values[variable] ?? "")
        guard accepted.isEmpty || values["AVIARY_SERVICE_SECRET"] != nil else {
            throw ConfigurationError(
                variable: variable,
                message: "\(variable) needs AVIARY_SERVICE_SECRET: it lists the credentials accepted besides that one")
        }
        for secret in accepted { try refusePlaceholder(secret, variable: variable) }
        return accepted
    }

    /// A credential left as a template's placeholder (`REPLACE-ME…`, as in the Kubernetes Secret) is
    /// known to everyone: it would let anyone make internal calls, and sign private media URLs.
    private static func refusePlaceholder(_ secret: String, variable: String) throws {
        guard !secret.uppercased().hasPrefix("REPLACE-ME") else {
            throw ConfigurationError(
                variable: variable,
                message: "\(variable) is still a placeholder (REPLACE-ME…): set a secret of your own, such as the output of openssl rand -hex 32")
        }
    }

    /// `AVIARY_POSTGRES_REPLICA_URLS`: each a `postgres://` URL.
    private static func replicaURLs(_ values: ConfigurationValues) throws -> [String] {
        let key = "AVIARY_POSTGRES_REPLICA_URLS"
        return try ConfigurationValues.commaSeparated(values[key] ?? "").map {
            try ConfigurationValues.url($0, of: key, schemes: ["postgres", "postgresql"])
        }
    }

    /// `AVIARY_REDIS_URL`, parsed once here so that a bad one stops the service naming the variable.
    private static func redisURL(_ values: ConfigurationValues) throws -> String {
        let key = "AVIARY_REDIS_URL"
        let url = try values.url(key, default: "redis://127.0.0.1:6379", schemes: ["redis", "unix", "redis+cluster", "redis+sentinel"])
        do {
            _ = try RedisConfiguration(url: url)
        } catch let error as RedisError {
            throw ConfigurationError(
                variable: key,
                message: "\(key) is not a usable Redis URL: \(error.configurationProblem ?? "\(error.code)") (value not shown)")
        }
        return url
    }

    /// Reads and validates the configuration of `service`.
    ///
    /// When `AVIARY_CONFIG_FILE` is set, its `KEY=VALUE` lines are read first and the environment
    /// overrides them. An empty value counts as unset.
    /// - Throws: ``ConfigurationError`` naming the first variable that is invalid.
    public static func load(
        service: ServiceName,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> ServiceConfiguration {
        let file = try environment[ConfigurationFile.variable].flatMap { path in
            path.isEmpty ? nil : try ConfigurationFile.load(path: path)
        }
        let values = ConfigurationValues(file: file ?? [:], environment: environment)

        var addresses: [ServiceName: [String]] = [:]
        for other in ServiceName.allCases {
            if let raw = values[ServiceAddresses.variable(for: other)] {
                addresses[other] = try ServiceAddresses.parse(raw, service: other)
            }
        }
        let host = values.string("AVIARY_HOST", default: "127.0.0.1").trimmingCharacters(in: .whitespaces)
        guard !host.contains(where: \.isWhitespace) else {
            throw ConfigurationError(
                variable: "AVIARY_HOST", message: "AVIARY_HOST must be an IP address or host name, got '\(host)'")
        }

        let redisURL = try redisURL(values)
        return ServiceConfiguration(
            service: service,
            postgresURL: try values.url(
                "AVIARY_POSTGRES_URL", default: "postgres://aviary@127.0.0.1:5432/aviary",
                schemes: ["postgres", "postgresql"]),
            postgresPoolSize: try values.integer("AVIARY_POSTGRES_POOL_SIZE", default: 8, in: 1...1024),
            postgresStatementTimeout: .milliseconds(
                try values.integer("AVIARY_POSTGRES_STATEMENT_TIMEOUT_MS", default: 10_000, in: 100...3_600_000)),
            postgresPrepared: try values.choice("AVIARY_POSTGRES_PREPARED", default: true, from: ["on": true, "off": false]),
            postgresReplicaURLs: try replicaURLs(values),
            postgresReplicaWindow: .milliseconds(try values.integer("AVIARY_POSTGRES_REPLICA_WINDOW_MS", default: 2_000, in: 100...60_000)),
            redisURL: redisURL,
            redisPoolSize: try values.integer("AVIARY_REDIS_POOL_SIZE", default: 8, in: 1...1024),
            redisReplicaAcknowledgements: try values.integer(
                "AVIARY_REDIS_REPLICA_ACKS", default: redisURL.hasPrefix("redis+") ? 1 : 0, in: 0...16),
            host: host,
            rpcPort: try values.integer("AVIARY_RPC_PORT", default: service.defaultRPCPort, in: 0...65535),
            adminPort: try values.integer("AVIARY_ADMIN_PORT", default: service.defaultAdminPort, in: 0...65535),
            nodeID: try values.integer("AVIARY_NODE_ID", in: 0...SnowflakeGenerator.maxNodeID),
            serviceSecret: try serviceSecret(values),
            acceptedServiceSecrets: try acceptedServiceSecrets(values),
            logLevel: try values.choice(
                "AVIARY_LOG_LEVEL", default: .info,
                from: [
                    "trace": .trace, "debug": .debug, "info": .info, "notice": .notice,
                    "warning": .warning, "error": .error, "critical": .critical,
                ]),
            logFormat: try values.choice("AVIARY_LOG_FORMAT", default: .text, from: ["text": .text, "json": .json]),
            maxFrameBytes: try values.integer(
                "AVIARY_MAX_FRAME_BYTES", default: service.defaultMaxFrameBytes, in: 1024...(1 << 30)),
            maxConnections: try values.integer(
                "AVIARY_MAX_CONNECTIONS", default: ConnectionLimit.defaultLimit, in: 1...10_000_000),
            eventLoops: try values.integer("AVIARY_EVENT_LOOPS", default: System.coreCount, in: 1...256),
            serviceAddresses: addresses,
            values: values
        )
    }
}
