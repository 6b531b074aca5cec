import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Logging
import Postgres
import RPC
import Redis
import Synchronization

/// Real Aviary executables wired together for multi-service tests: one fresh database (each service
/// in its own schema, as in production), one Redis database, one service credential and one token
/// signing key, and every `AVIARY_<SERVICE>_ADDRESSES` pointing at the stack's instance.
///
/// A service may run as several instances (`instances`): the others are then given every one of
/// their addresses, as a production deployment would, and spread their calls over them. Ports are
/// chosen before any process starts, so services that call each other find each other whatever
/// order they become ready in, and a restarted instance comes back on the same ports.
public final class ServiceStack: Sendable {
    /// The environment every service of the stack runs with (ports aside).
    public let environment: [String: String]
    /// What one service runs with besides ``environment`` (its own database, say).
    private let serviceEnvironments: [String: [String: String]]
    public let serviceCredential: String
    /// The stack's database, for checks of what the services stored.
    public let database: PostgresClient
    /// The stack's Redis database.
    public let redis: RedisClient
    private let ports: [String: [(rpc: Int, admin: Int)]]
    /// The public HTTP port of each gateway instance (`AVIARY_GATEWAY_PORT`).
    private let gatewayPorts: [Int]
    private let processes: Locked<[String: [ServiceProcess]]>
    private let clients: [String: RPCClient]
    /// Folders the stack made (the shared media root), removed with it.
    private let cleanupTokens: [Int]
    /// The servers the stack was given (private ones stop with their last reference): they live as
    /// long as it.
    private let servers: [any Sendable]
    private let userCounter = Atomic<Int>(0)
    /// Every answer of ``call(_:_:_:as:decoding:)`` and ``callInternal(_:_:_:decoding:)`` is checked
    /// against its method's published result schema.
    private let schemas = ResultSchemas()
    /// Makes usernames unique across stacks sharing a Postgres server in one test run.
    private let userPrefix = String(Int.random(in: 0..<36 * 36 * 36), radix: 36)

    private init(
        environment: [String: String], serviceEnvironments: [String: [String: String]], serviceCredential: String, database: PostgresClient, redis: RedisClient,
        ports: [String: [(rpc: Int, admin: Int)]], gatewayPorts: [Int], processes: [String: [ServiceProcess]],
        clients: [String: RPCClient], cleanupTokens: [Int], servers: [any Sendable]
    ) {
        self.gatewayPorts = gatewayPorts
        self.servers = servers
        self.cleanupTokens = cleanupTokens
        self.environment = environment
        self.serviceEnvironments = serviceEnvironments
        self.serviceCredential = serviceCredential
        self.database = database
        self.redis = redis
        self.ports = ports
        self.processes = Locked(processes)
        self.clients = clients
    }

    /// The seven services, by executable suffix.
    public static let allServices = ["auth", "social-graph", "tweets", "timeline", "messaging", "notifications", "media"]

    /// Starts `services` (by executable suffix, ``allServices``) on a new database and Redis database `redisDatabase`
    /// (which is flushed first), with `extra` added to their environment, and waits until each is ready.
    /// `instances` says how many of a service to run (one when not listed). `postgresServer` and
    /// `redisServer` are the suite's shared servers unless given (private ones, for tests that stop them).
    /// `servicePostgresURL` turns the new database's URL into the one the services get (through a
    /// pooler, or naming a replica too); the stack's own client keeps the direct one.
    /// `serviceEnvironment` adds to one service's environment (by executable suffix), over `extra`.
    /// `redisURL` replaces the Redis (and `redisDatabase`): a cluster's or Sentinel set's URL.
    /// `replica`, a streaming replica of `postgresServer`, is given to the services as
    /// `AVIARY_POSTGRES_REPLICA_URLS` (the same database on it). `retaining` keeps other servers the
    /// stack runs on (a cluster's nodes, a pooler) alive as long as the stack.
    ///
    /// Passwords are hashed at a low Argon2 cost so that tests can make many accounts quickly.
    public static func start(
        _ services: [String], redisDatabase: Int, environment extra: [String: String] = [:],
        instances: [String: Int] = [:], postgresServer: TestPostgres? = nil, redisServer: TestRedis? = nil,
        servicePostgresURL: (String) -> String = { $0 }, serviceEnvironment: [String: [String: String]] = [:],
        redisURL givenRedisURL: String? = nil, replica: TestPostgres? = nil, retaining: [any Sendable] = []
    ) async throws -> ServiceStack {
        let postgres = if let postgresServer { postgresServer } else { try await TestServers.postgres() }
        let databaseURL = try await postgres.makeDatabase()
        let redisURL: String
        if let givenRedisURL {
            redisURL = givenRedisURL
        } else {
            let redisServer = if let redisServer { redisServer } else { try await TestServers.redis() }
            redisURL = redisServer.url + "/\(redisDatabase)"
        }
        let serviceCredential = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let seed = (0..<32).map { _ in UInt8.random(in: 0...255) }

        var ports: [String: [(rpc: Int, admin: Int)]] = [:]
        for service in services {
            ports[service] = try (0..<max(1, instances[service] ?? 1)).map { _ in (try freePort(), try freePort()) }
        }
        let gatewayPorts = try (ports["gateway"] ?? []).map { _ in try freePort() }
        var environment = [
            "AVIARY_POSTGRES_URL": servicePostgresURL(databaseURL),
            "AVIARY_POSTGRES_POOL_SIZE": "8",
            "AVIARY_REDIS_URL": redisURL,
            "AVIARY_SERVICE_SECRET": serviceCredential,
            "AVIARY_TOKEN_SIGNING_KEY": Data(seed).base64EncodedString(),
            "AVIARY_AUTH_ARGON2_MEMORY_KIB": "256",
            "AVIARY_AUTH_ARGON2_ITERATIONS": "1",
            "AVIARY_AUTH_LOGIN_PER_ACCOUNT_PER_MINUTE": "100000",
            "AVIARY_AUTH_LOGIN_PER_ADDRESS_PER_MINUTE": "100000",
            "AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR": "100000",
        ]
        for (service, ports) in ports {
            environment["AVIARY_\(variablePart(service))_ADDRESSES"] = ports.map { "127.0.0.1:\($0.rpc)" }.joined(separator: ",")
        }
        var cleanupTokens: [Int] = []
        if let media = ports["media"]?.first {
            environment["AVIARY_MEDIA_PUBLIC_URL"] = "http://127.0.0.1:\(media.admin)"
            // Every media instance serves every file, as with a shared volume in production.
            let root = try TemporaryFolder.create("media-root")
            cleanupTokens.append(ExitCleanup.register(root))
            environment["AVIARY_MEDIA_ROOT"] = root.path
        }
        if let replica, let database = databaseURL.split(separator: "/").last {
            environment["AVIARY_POSTGRES_REPLICA_URLS"] = replica.url(database: String(database))
        }
        environment.merge(extra) { _, given in given }

        let logger = Logger(label: "service-stack")
        let redis = RedisClient(configuration: try RedisConfiguration(url: redisURL, poolSize: 4), logger: logger)
        _ = try await redis.send(["FLUSHDB"])
        var options = PostgresConfiguration.Options()
        options.poolSize = 4
        let database = try PostgresClient(configuration: PostgresConfiguration(url: databaseURL, options: options), logger: logger)

        let sharedEnvironment = environment
        let processes = try await withThrowingTaskGroup(of: (String, Int, ServiceProcess).self) { group in
            for (service, ports) in ports {
                for (instance, port) in ports.enumerated() {
                    group.addTask {
                        let process = try await startProcess(
                            service, environment: sharedEnvironment.merging(serviceEnvironment[service] ?? [:]) { _, own in own },
                            rpc: port.rpc, admin: port.admin,
                            http: service == "gateway" ? gatewayPorts[instance] : nil)
                        return (service, instance, process)
                    }
                }
            }
            var started: [String: [Int: ServiceProcess]] = [:]
            for try await (service, instance, process) in group { started[service, default: [:]][instance] = process }
            return started.mapValues { byInstance in byInstance.keys.sorted().map { byInstance[$0]! } }
        }
        var clients: [String: RPCClient] = [:]
        for (service, ports) in ports {
            var configuration = RPCClient.Configuration(addresses: ports.map { "127.0.0.1:\($0.rpc)" })
            configuration.connectionsPerAddress = 4
            clients[service] = RPCClient(configuration: configuration, logger: logger)
        }
        return ServiceStack(
            environment: environment, serviceEnvironments: serviceEnvironment, serviceCredential: serviceCredential, database: database, redis: redis,
            ports: ports, gatewayPorts: gatewayPorts, processes: processes, clients: clients, cleanupTokens: cleanupTokens,
            servers: [postgres as any Sendable] + (redisServer.map { [$0] } ?? []) + (replica.map { [$0] } ?? []) + retaining)
    }

    deinit {
        for token in cleanupTokens { ExitCleanup.release(token) }
    }

    /// `social-graph` → `SOCIAL_GRAPH`, as in `AVIARY_SOCIAL_GRAPH_ADDRESSES`.
    private static func variablePart(_ service: String) -> String {
        service.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    private static func startProcess(
        _ service: String, environment: [String: String], rpc: Int, admin: Int, http: Int? = nil
    ) async throws -> ServiceProcess {
        var environment = environment
        environment["AVIARY_RPC_PORT"] = String(rpc)
        environment["AVIARY_ADMIN_PORT"] = String(admin)
        if let http { environment["AVIARY_GATEWAY_PORT"] = String(http) }
        return try await ServiceProcess.start(executable: "aviary-\(service)", environment: environment)
    }

    /// Runs the `aviary` tool with `arguments` and the stack's settings (its database, its Redis),
    /// as an operator on the services' host would: its exit status and output.
    public func tool(_ arguments: [String]) async throws -> Command.Result {
        let environment = ProcessInfo.processInfo.environment.merging(self.environment) { _, stack in stack }
        return try await Command(arguments: [try BuildProducts.executable(named: "aviary")] + arguments, environment: environment).run()
    }

    /// The public URL of gateway instance `instance` (`http://127.0.0.1:<AVIARY_GATEWAY_PORT>`).
    public func gatewayURL(instance: Int = 0) -> String {
        "http://127.0.0.1:\(gatewayPorts[instance])"
    }

    /// Instance `instance` (the first by default) of `service`.
    public func process(_ service: String, instance: Int = 0) -> ServiceProcess {
        processes(service)[instance]
    }

    /// Every instance of `service` the stack's addresses point at.
    public func processes(_ service: String) -> [ServiceProcess] {
        guard let processes = processes.withLock({ $0[service] }) else {
            preconditionFailure("\(service) is not part of this stack")
        }
        return processes
    }

    /// A client of `service`, spreading calls over all its instances.
    public func client(_ service: String) -> RPCClient {
        guard let client = clients[service] else { preconditionFailure("\(service) is not part of this stack") }
        return client
    }

    /// Stops an instance of `service` (SIGKILL, or SIGTERM when `graceful`) and starts it again on
    /// the same ports.
    public func restart(_ service: String, instance: Int = 0, graceful: Bool = false) async throws {
        try await stop(service, instance: instance, graceful: graceful)
        try await start(service, instance: instance)
    }

    /// Stops an instance of `service`: `kill -9`, or SIGTERM when `graceful`.
    public func stop(_ service: String, instance: Int = 0, graceful: Bool = false) async throws {
        let old = process(service, instance: instance)
        if graceful { old.terminate() } else { old.kill() }
        _ = await old.waitForExit(timeout: .seconds(30))
    }

    /// What `service` runs with: the stack's environment and its own.
    private func environment(of service: String) -> [String: String] {
        environment.merging(serviceEnvironments[service] ?? [:]) { _, own in own }
    }

    /// Starts a stopped instance of `service` again on its ports.
    public func start(_ service: String, instance: Int = 0) async throws {
        let port = ports[service]![instance]
        let new = try await Self.startProcess(
            service, environment: environment(of: service), rpc: port.rpc, admin: port.admin,
            http: service == "gateway" ? gatewayPorts[instance] : nil)
        processes.withLock { $0[service]![instance] = new }
    }

    /// Another instance of `service` on ports of its own; the other services' addresses do not
    /// include it.
    public func startExtraInstance(_ service: String, environment extra: [String: String] = [:]) async throws -> ServiceProcess {
        try await Self.startProcess(
            service, environment: environment(of: service).merging(extra) { _, given in given }, rpc: try freePort(),
            admin: try freePort())
    }

    /// Registers a new account through `auth.register` (auth must be in the stack).
    public func makeUser(_ name: String = "user") async throws -> StackUser {
        let number = userCounter.add(1, ordering: .relaxed).newValue
        let username = "\(name.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(6))_\(userPrefix)\(number)"
        let registered: Registered = try await client("auth").call(
            "auth.register",
            params: [
                "email": JSONValue.string("\(username)@example.com"), "password": "correct horse battery",
                "username": .string(username), "fullname": .string("Test \(name)"),
            ], as: Registered.self)
        return StackUser(id: registered.user.id, username: username, token: registered.accessToken)
    }

    /// `count` new accounts, registered a few at a time.
    public func makeUsers(_ count: Int, _ name: String = "user") async throws -> [StackUser] {
        try await withThrowingTaskGroup(of: (Int, StackUser).self) { group in
            var users = [StackUser?](repeating: nil, count: count)
            var next = 0
            func add() {
                let index = next
                next += 1
                group.addTask { (index, try await self.makeUser(name)) }
            }
            while next < min(count, 8) { add() }
            for try await (index, user) in group {
                users[index] = user
                if next < count { add() }
            }
            return users.map { $0! }
        }
    }

    /// Calls a method of `service` as `user` (or anonymously), checks the result against the
    /// method's published schema, and decodes it.
    public func call<Result: Decodable>(
        _ service: String, _ method: String, _ params: [String: JSONValue] = [:], as user: StackUser? = nil,
        decoding type: Result.Type = Result.self
    ) async throws -> Result {
        try await checkedCall(service, method, params, meta: RequestMeta(token: user?.token))
    }

    /// Calls an internal method of `service` with the stack's service credential; the result is
    /// checked as ``call(_:_:_:as:decoding:)`` checks it.
    public func callInternal<Result: Decodable>(
        _ service: String, _ method: String, _ params: [String: JSONValue], decoding type: Result.Type = Result.self
    ) async throws -> Result {
        try await checkedCall(service, method, params, meta: RequestMeta(service: serviceCredential))
    }

    private func checkedCall<Result: Decodable>(
        _ service: String, _ method: String, _ params: [String: JSONValue], meta: RequestMeta
    ) async throws -> Result {
        let client = client(service)
        let raw = try await client.call(method, params: params, meta: meta, as: RawJSON.self)
        let data = Data(raw.bytes)
        try await schemas.check(try WireDecoding.decode(JSONValue.self, from: data), of: method, from: client)
        return try WireDecoding.decode(Result.self, from: data)
    }

    private struct Registered: Decodable {
        struct User: Decodable { var id: EntityID }
        var user: User
        var accessToken: String
    }
}

/// An account of a ``ServiceStack``, with an access token of its own.
public struct StackUser: Sendable, Hashable {
    public var id: EntityID
    public var username: String
    public var token: String

    /// The id as the wire carries it.
    public var idValue: JSONValue { .string(id.description) }
}

extension JSONValue {
    /// An id as the wire sends it.
    public static func id(_ id: EntityID) -> JSONValue { .string(id.description) }
    /// A list of ids as the wire sends it.
    public static func ids(_ ids: [EntityID]) -> JSONValue { .array(ids.map { .string($0.description) }) }
}
