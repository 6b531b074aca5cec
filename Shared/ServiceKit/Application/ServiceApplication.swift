import Foundation
import AuthTokens
import Logging
import Metrics
import NIOCore
import NIOPosix
import Postgres
import Prometheus
import RPC
import Redis
import ServiceLifecycle
import UnixSignals

/// Builds and runs one Aviary service process: configuration, logging, metrics, storage,
/// migrations, shared secrets, the JSON-RPC server, the admin HTTP server, systemd
/// notifications, and graceful shutdown on SIGTERM/SIGINT.
public enum ServiceApplication {
    /// The whole life of a service executable; `main.swift` calls only this.
    public static func main(_ definition: ServiceDefinition) async {
        if CommandLine.arguments.contains("--version") {
            print("\(definition.name.executableName) \(AviaryVersion.description)")
            return
        }
        // Before the configuration, whose default AVIARY_MAX_CONNECTIONS follows the limit.
        FileDescriptorLimit.raiseSoftToHard()
        let configuration: ServiceConfiguration
        do {
            configuration = try ServiceConfiguration.load(service: definition.name)
        } catch {
            FileHandle.standardError.write(Data("\(definition.name.executableName): \(error)\n".utf8))
            exit(2)
        }
        // Before anything starts the shared event loops, which then keep their number.
        NIOSingletons.groupLoopCountSuggestion = configuration.eventLoops
        LoggingBootstrap.bootstrap(
            format: configuration.logFormat, level: configuration.logLevel, service: definition.name.rawValue)
        let registry = MetricsBootstrap.bootstrap()
        let logger = Logger(label: "aviary.\(definition.name.rawValue)")
        do {
            try await run(definition, configuration: configuration, registry: registry, logger: logger)
        } catch {
            logger.critical("the service stopped on an error", metadata: ["error": "\(String(reflecting: error))"])
            exit(1)
        }
    }

    /// Runs the service until SIGTERM or SIGINT, then drains and returns. Tests call it in-process.
    public static func run(
        _ definition: ServiceDefinition, configuration: ServiceConfiguration, registry: PrometheusCollectorRegistry,
        logger: Logger
    ) async throws {
        let started = ContinuousClock.now
        // Start-up work that must finish before the service takes calls; a signal during it ends the process.
        let prepared = try await untilSignalled(logger: logger) {
            try await prepare(definition, configuration: configuration, logger: logger, started: started)
        }
        guard let prepared else { return }
        let (router, resources, lease) = (prepared.router, prepared.resources, prepared.lease)
        let (postgres, redis) = (resources.postgres, resources.redis)

        // One limit for both listeners: together they must leave descriptors for everything else.
        let connections = ConnectionLimit(limit: configuration.maxConnections)
        let rpcServer = RPCServer(
            router: router,
            configuration: .init(host: configuration.host, port: configuration.rpcPort, maxFrameBytes: configuration.maxFrameBytes),
            connections: connections, logger: logger)
        let poolInUse = Gauge(label: "aviary_postgres_pool_in_use")
        let adminServer = AdminHTTPServer(
            host: configuration.host, port: configuration.adminPort, registry: registry,
            beforeMetrics: { poolInUse.record(postgres.connectionsInUse) },
            readiness: { [added = resources.readinessChecks] in
                async let postgres = postgres.isReachable()
                async let redis = redis.isReachable()
                var checks = ["postgres": await postgres, "redis": await redis, "migrations": true]
                for (name, check) in added { checks[name] = await check() }
                return checks
            },
            routes: resources.adminRoutes,
            connectionLimit: connections,
            logger: logger)
        let notifier = SystemdNotifier()
        let events = EventServices(definition, resources: resources)
        let group = ServiceGroup(
            configuration: .init(
                // The lease first: a group stops its services in reverse order, so it is released last.
                services: leaseService(lease) + events.relay + resources.backgroundServices
                    + [.init(service: rpcServer), .init(service: adminServer)]
                    + events.consumers
                    + [
                        .init(service: OnEventLoop(RevocationWatch(revocations: resources.sessionRevocations, logger: logger))),
                        .init(service: StoppingAnnouncer(notifier: notifier)),
                    ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))

        // The process lives as long as the service group; the announcer and watchdog end with it.
        try await withThrowingTaskGroup(of: Bool.self) { tasks in
            tasks.addTask {
                try await group.run()
                return true
            }
            tasks.addTask {
                let rpcPort = try await rpcServer.listeningPort()
                let adminPort = try await adminServer.boundPort
                logger.info(
                    "ready rpc=\(configuration.host):\(rpcPort) admin=\(configuration.host):\(adminPort)",
                    metadata: ["version": "\(AviaryVersion.version)", "revision": "\(AviaryVersion.revision)"])
                try? notifier.notify("READY=1\nSTATUS=serving")
                await notifier.runWatchdog(logger: logger)
                return false
            }
            while let groupEnded = try await tasks.next() {
                if groupEnded { break }
            }
            tasks.cancelAll()
        }
        await resources.shutdown()
        logger.info("stopped")
    }

    /// Builds the service in this process, ready to take calls: storage clients, migrations, the
    /// token keys, the service credential, a node id, and a router with the health methods and
    /// every method `definition` registers. ``run`` serves what this returns; tests call its router
    /// directly (`router.respond(to:)`), as Hummingbird's tests call an application's router.
    public static func prepare(
        _ definition: ServiceDefinition, configuration: ServiceConfiguration, logger: Logger,
        started: ContinuousClock.Instant = .now
    ) async throws -> PreparedService {
        var postgresOptions = PostgresConfiguration.Options()
        postgresOptions.poolSize = configuration.postgresPoolSize
        postgresOptions.statementTimeout = configuration.postgresStatementTimeout
        postgresOptions.transactionPooling = !configuration.postgresPrepared
        postgresOptions.applicationName = definition.name.executableName
        let postgres = try PostgresClient(
            configuration: PostgresConfiguration(url: configuration.postgresURL, options: postgresOptions), logger: logger)
        let redis = RedisClient(
            configuration: try RedisConfiguration(url: configuration.redisURL, poolSize: configuration.redisPoolSize),
            logger: logger)
        let replicas = try configuration.postgresReplicaURLs.map { url in
            try PostgresClient(configuration: PostgresConfiguration(url: url, options: postgresOptions), logger: logger)
        }
        let startUp: StartUp
        do {
            startUp = try await self.startUp(definition, configuration: configuration, postgres: postgres, logger: logger)
        } catch {
            await postgres.shutdown()
            await redis.shutdown()
            for replica in replicas { await replica.shutdown() }
            throw error
        }
        let resources = await ServiceResources(
            configuration: configuration, postgres: postgres, replicas: replicas, redis: redis, serviceCredential: startUp.credential,
            tokenKeys: startUp.tokenKeys, tokenLifetime: startUp.tokenLifetime,
            revocationStaleWindow: startUp.revocationStaleWindow, nodeID: startUp.nodeID, logger: logger)
        if resources.replicaReads.hasReplicas {
            let reads = resources.replicaReads
            resources.addBackgroundService(PeriodicJob(every: ReplicaReads.checkInterval) { await reads.checkReplicas() })
        }
        let verifier = resources.tokenVerifier
        var router = RPCRouter(
            service: definition.name.rawValue, version: AviaryVersion.version, logger: logger,
            authenticator: ServiceAuthenticator(
                acceptedCredentials: resources.acceptedServiceCredentials,
                verifyToken: { token throws(RPCError) in try await verifier.verify(token) }))
        router.registerHealth(resources: resources, started: started)
        do {
            try await definition.register(&router, resources)
        } catch {
            await startUp.lease?.release()
            await resources.shutdown()
            throw error
        }
        return PreparedService(router: router, resources: resources, lease: startUp.lease)
    }

    /// Migrations, token keys, the service credential and the node id, retried while Postgres
    /// cannot be reached.
    private static func startUp(
        _ definition: ServiceDefinition, configuration: ServiceConfiguration, postgres: PostgresClient, logger: Logger
    ) async throws -> StartUp {
        let tokenLifetime = try TokenKeyLoading.lifetime(configuration: configuration)
        let staleWindow = try TokenKeyLoading.revocationStaleWindow(configuration: configuration)
        try await waitForPostgres(postgres, logger: logger) {
            _ = try await SharedSchema.migrator.migrate(postgres)
            _ = try await PostgresMigrator(schema: definition.schema, migrations: definition.migrations).migrate(postgres)
        }
        let tokenKeys = try await TokenKeyLoading.load(configuration: configuration, postgres: postgres, logger: logger)
        let credential =
            if let configured = configuration.serviceSecret {
                configured
            } else {
                try await SharedSecrets.value(named: "service_credential", postgres: postgres, logger: logger)
            }
        if let configured = configuration.nodeID {
            return StartUp(credential: credential, tokenKeys: tokenKeys, tokenLifetime: tokenLifetime,
                revocationStaleWindow: staleWindow, nodeID: configured, lease: nil)
        }
        // Last, so that a start-up that fails before holds no id.
        let lease = try await NodeLease.acquire(
            postgres: postgres, holder: NodeLease.holderName(service: definition.name.rawValue), logger: logger)
        return StartUp(credential: credential, tokenKeys: tokenKeys, tokenLifetime: tokenLifetime,
            revocationStaleWindow: staleWindow, nodeID: lease.nodeID, lease: lease)
    }

    /// What start-up settled before the service takes calls.
    private struct StartUp: Sendable {
        var credential: String
        var tokenKeys: TokenKeys
        var tokenLifetime: Duration
        var revocationStaleWindow: Duration
        /// `AVIARY_NODE_ID`, or the leased one.
        var nodeID: Int
        /// The lease, when the node id is leased.
        var lease: NodeLease?
    }

    /// The node id lease as the group's service: losing it stops the service gracefully, and the
    /// process then exits with an error.
    private static func leaseService(_ lease: NodeLease?) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        lease.map { [.init(service: OnEventLoop($0), failureTerminationBehavior: .gracefullyShutdownGroup)] } ?? []
    }

    /// Retries `body` while the database cannot be reached, so a service may start before Postgres.
    private static func waitForPostgres(
        _ postgres: PostgresClient, logger: Logger, _ body: () async throws -> Void
    ) async throws {
        var delay = Duration.milliseconds(200)
        while true {
            do {
                return try await body()
            } catch let error as PostgresError where error.code == .connectionFailed || error.code == .timeout {
                logger.warning("waiting for Postgres", metadata: ["error": "\(error)", "retry_in": "\(delay)"])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Runs `body` unless SIGTERM or SIGINT comes first; returns nil when a signal won.
    private static func untilSignalled<T: Sendable>(logger: Logger, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T?
    {
        try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask { try await body() }
            tasks.addTask {
                for await signal in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
                    logger.info("signalled during start-up; stopping", metadata: ["signal": "\(signal)"])
                    return nil
                }
                return nil
            }
            defer { tasks.cancelAll() }
            return try await tasks.next()!
        }
    }
}
