import AuthTokens
import EventStreams
import Locking
import Logging
import Postgres
import RPC
import Redis

/// The shared things a service's handlers use: storage clients, ids, the service credential, and
/// clients of the other services (created on first use, one pool per service).
public final class ServiceResources: Sendable {
    public let configuration: ServiceConfiguration
    public let postgres: PostgresClient
    /// Where reads that tolerate a little lag go (the primary when no replica is configured).
    public let replicaReads: ReplicaReads
    public let redis: RedisClient
    public let ids: SnowflakeGenerator
    public let logger: Logger
    /// The credential internal calls carry in `_meta.service`.
    public let serviceCredential: String
    /// Every credential accepted on incoming internal calls: ``serviceCredential`` first, then those
    /// accepted besides it while it is being rotated (``ServiceConfiguration/acceptedServiceSecrets``).
    public var acceptedServiceCredentials: [String] { [serviceCredential] + configuration.acceptedServiceSecrets }
    /// Access-token keys (a signing key only where configured or shared through the database).
    public let tokenKeys: TokenKeys
    public let tokenLifetime: Duration
    public let tokenVerifier: AccessTokenVerifier
    public let sessionRevocations: SessionRevocations
    private let clients = Locked<[ServiceName: RPCClient]>([:])
    /// The hub of ``liveHub``, once asked for.
    let liveHubSlot = Locked<LiveHub?>(nil)
    /// This process's copy of who is blocked with whom, once ``keepBlocksInMemory()`` made it.
    let blocksSlot = Locked<LocalCopy<Set<Int64>>?>(nil)
    /// This process's copy of whom users mute, once ``keepMutesInMemory()`` made it.
    let mutesSlot = Locked<LocalCopy<Set<Int64>>?>(nil)
    /// Admin routes and background services `register` added (``addAdminRoutes(_:)``).
    let addedParts = Locked(AddedParts())

    init(
        configuration: ServiceConfiguration, postgres: PostgresClient, replicas: [PostgresClient] = [], redis: RedisClient,
        serviceCredential: String, tokenKeys: TokenKeys, tokenLifetime: Duration, revocationStaleWindow: Duration, nodeID: Int,
        logger: Logger
    ) async {
        self.configuration = configuration
        self.postgres = postgres
        self.replicaReads = ReplicaReads(
            primary: postgres, replicas: replicas, redis: redis, window: configuration.postgresReplicaWindow,
            service: configuration.service.rawValue, logger: logger)
        self.redis = redis
        self.serviceCredential = serviceCredential
        self.tokenKeys = tokenKeys
        self.tokenLifetime = tokenLifetime
        self.sessionRevocations = SessionRevocations(
            redis: redis, tokenLifetime: tokenLifetime, staleWindow: revocationStaleWindow,
            replicaAcknowledgements: configuration.redisReplicaAcknowledgements)
        self.tokenVerifier = await AccessTokenVerifier(keys: tokenKeys, revocations: sessionRevocations, logger: logger)
        self.logger = logger
        self.ids = SnowflakeGenerator(nodeID: nodeID)
    }

    /// The client of another service, over every address configured for it.
    public func client(for service: ServiceName) -> RPCClient {
        clients.withLock { clients in
            if let client = clients[service] { return client }
            let client = RPCClient(
                configuration: .init(addresses: configuration.addresses(of: service)),
                logger: logger.with("peer.service", service.rawValue))
            clients[service] = client
            return client
        }
    }

    /// `_meta` for an internal call made while handling `context`: the credential, the trace and the remaining budget.
    public func internalMeta(_ context: RPCContext? = nil) -> RequestMeta {
        context?.downstreamMeta(service: serviceCredential) ?? RequestMeta(service: serviceCredential)
    }

    func shutdown() async {
        for client in clients.withLock({ Array($0.values) }) { await client.shutdown() }
        await redis.shutdown()
        await replicaReads.shutdown()
        await postgres.shutdown()
    }
}

extension Logger {
    func with(_ key: String, _ value: String) -> Logger {
        var logger = self
        logger[metadataKey: key] = "\(value)"
        return logger
    }
}
