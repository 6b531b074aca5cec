import AuthTokens
import AviaryAPI
import AviaryJSON
import Foundation
import Logging
import Postgres
import RPC
import Redis
import Synchronization
import TestSupport

/// One `aviary-social-graph` process for the whole suite, on a database and a Redis database of its
/// own, with the auth stand-in as its accounts service, plus what tests need to act as users and as
/// a service: token minting with the same Ed25519 key, the service credential, and clients of the
/// service's Postgres database and Redis.
final class GraphStack: Sendable {
    let graph: ServiceProcess
    let auth: AuthStandIn
    let client: RPCClient
    /// The service's database, for checks of what it stored.
    let database: PostgresClient
    /// The service's Redis, where the outbox relay moves events to.
    let redis: RedisClient
    let serviceCredential: String
    /// The environment the service runs with, for tests that start another instance.
    let environment: [String: String]
    private let issuer: AccessTokenIssuer
    /// Ids from a random start, so that they meet no other test's users in shared servers; they
    /// grow one by one, so users made one after the other sort in the order they were made.
    private let nextUserID = Atomic<Int64>(Int64.random(in: (1 << 40)...(1 << 50)))

    private init(
        graph: ServiceProcess, auth: AuthStandIn, client: RPCClient, database: PostgresClient, redis: RedisClient,
        serviceCredential: String, environment: [String: String], issuer: AccessTokenIssuer
    ) {
        self.environment = environment
        self.graph = graph
        self.auth = auth
        self.client = client
        self.database = database
        self.redis = redis
        self.serviceCredential = serviceCredential
        self.issuer = issuer
    }

    private static let started = Task { try await GraphStack.start() }

    /// The suite's stack, started on first use.
    static func shared() async throws -> GraphStack {
        try await started.value
    }

    private static func start() async throws -> GraphStack {
        let postgres = try await TestServers.postgres()
        // A Redis database of its own keeps the suite's event stream apart from other suites'.
        let redisURL = try await TestServers.redis().url + "/7"
        let databaseURL = try await postgres.makeDatabase()
        let seed = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let serviceCredential = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let auth = try await AuthStandIn.start(serviceCredential: serviceCredential)
        let environment = [
            "AVIARY_POSTGRES_URL": databaseURL,
            "AVIARY_POSTGRES_POOL_SIZE": "16",
            "AVIARY_REDIS_URL": redisURL,
            "AVIARY_AUTH_ADDRESSES": auth.address,
            "AVIARY_SERVICE_SECRET": serviceCredential,
            "AVIARY_TOKEN_SIGNING_KEY": Data(seed).base64EncodedString(),
        ]
        let graph = try await startInstance(environment)
        auth.useGraph(address: graph.rpcAddress)
        var configuration = RPCClient.Configuration(addresses: [graph.rpcAddress])
        configuration.connectionsPerAddress = 4
        let client = RPCClient(configuration: configuration, logger: Logger(label: "graph-tests"))
        var options = PostgresConfiguration.Options()
        options.poolSize = 2
        let database = try PostgresClient(
            configuration: PostgresConfiguration(url: databaseURL, options: options), logger: Logger(label: "graph-tests"))
        let redis = RedisClient(configuration: try RedisConfiguration(url: redisURL, poolSize: 2), logger: Logger(label: "graph-tests"))
        let issuer = try await AccessTokenIssuer(keys: TokenKeys(signingSeed: seed))
        return GraphStack(
            graph: graph, auth: auth, client: client, database: database, redis: redis, serviceCredential: serviceCredential,
            environment: environment, issuer: issuer)
    }

    /// Starts an `aviary-social-graph` process with `environment` on free ports.
    static func startInstance(_ environment: [String: String]) async throws -> ServiceProcess {
        var environment = environment
        environment["AVIARY_RPC_PORT"] = String(try freePort())
        environment["AVIARY_ADMIN_PORT"] = String(try freePort())
        return try await ServiceProcess.start(executable: "aviary-social-graph", environment: environment)
    }

    /// A user known to the accounts stand-in, with an access token of their own.
    struct TestUser: Sendable {
        var id: EntityID
        var token: String
        var username: String
    }

    /// A new user with a unique id, known to the stand-in.
    func makeUser(_ name: String = "user") async throws -> TestUser {
        let id = nextUserID.add(1, ordering: .relaxed).newValue
        let username = "\(name.prefix(8))_\(id)"
        auth.add(UserSummary(id: EntityID(id), username: username, fullname: "Test \(name)", profileImageUrl: nil))
        return TestUser(id: EntityID(id), token: try await token(for: id), username: username)
    }

    /// `count` new users.
    func makeUsers(_ count: Int, _ name: String = "user") async throws -> [TestUser] {
        var users: [TestUser] = []
        for _ in 0..<count { users.append(try await makeUser(name)) }
        return users
    }

    /// An id nobody has.
    func unknownID() -> EntityID {
        EntityID(nextUserID.add(1, ordering: .relaxed).newValue)
    }

    /// An access token for `userID`, signed with the key the service trusts.
    func token(for userID: Int64) async throws -> String {
        try await issuer.issue(userID: userID, sessionID: Int64.random(in: 1...Int64.max)).token
    }

    /// Calls a method as `user` (or anonymously) and decodes the result.
    func call<Result: Decodable>(
        _ method: String, _ params: [String: JSONValue] = [:], as user: TestUser? = nil, decoding type: Result.Type = Result.self
    ) async throws -> Result {
        try await client.call(method, params: params, meta: RequestMeta(token: user?.token), as: type)
    }

    /// Calls an internal method with the service credential.
    func callInternal<Result: Decodable>(
        _ method: String, _ params: [String: JSONValue], decoding type: Result.Type = Result.self
    ) async throws -> Result {
        try await client.call(method, params: params, meta: RequestMeta(service: serviceCredential), as: type)
    }

    @discardableResult
    func follow(_ follower: TestUser, _ followee: TestUser) async throws -> Bool {
        try await call("graph.follow", ["userId": .string(followee.id.description)], as: follower, decoding: FollowResult.self).following
    }

    @discardableResult
    func unfollow(_ follower: TestUser, _ followee: TestUser) async throws -> Bool {
        try await call("graph.unfollow", ["userId": .string(followee.id.description)], as: follower, decoding: FollowResult.self).following
    }

    /// The totals of `user` as stored (its counts row plus its deltas not folded in yet), or nil
    /// when it has neither.
    func storedCounts(_ user: EntityID) async throws -> StatsResult? {
        let rows = try await database.query(
            """
            SELECT sum(followers)::bigint, sum(following)::bigint FROM (
                SELECT followers, following FROM social_graph.counts WHERE user_id = $1
                UNION ALL
                SELECT followers, following FROM social_graph.count_deltas WHERE user_id = $1
            ) AS parts HAVING count(*) > 0
            """, [user.value])
        guard let row = rows.first else { return nil }
        return StatsResult(followers: try row.decode(Int64.self, at: 0), following: try row.decode(Int64.self, at: 1))
    }
}

/// A `graph` event, from the outbox table or from the stream the relay moved it to.
struct GraphEvent: Hashable {
    var outboxID: Int64
    var type: String
    var followerId: String
    var followeeId: String
    var at: String
}

extension GraphStack {
    /// Every `graph` event recorded since `since` (give or take a second), oldest first: those still
    /// in the outbox and those the relay already moved to `aviary:events:graph`. The table is read
    /// first, so an event moving meanwhile is found in the stream (XADD precedes the DELETE's commit).
    func events(since: Date) async throws -> [GraphEvent] {
        var events = Set<GraphEvent>()
        let rows = try await database.query("SELECT id, type, payload::text FROM social_graph.outbox WHERE topic = 'graph'")
        for row in rows {
            if let event = GraphEvent(
                outboxID: try row.decode(Int64.self, at: 0), type: try row.decode(String.self, at: 1),
                payload: try row.decode(String.self, at: 2))
            {
                events.insert(event)
            }
        }
        let start = Int64(since.timeIntervalSince1970 * 1000) - 1000
        let entries = try await redis.send(["XRANGE", "aviary:events:graph", RedisArgument("\(start)-0"), "+"]).array ?? []
        for entry in entries {
            guard let fields = entry.array?.last?.array else { continue }
            var values: [String: String] = [:]
            for pair in stride(from: 0, to: fields.count - 1, by: 2) {
                values[fields[pair].string ?? ""] = fields[pair + 1].string
            }
            guard values["source"] == "social_graph", let type = values["type"], let payload = values["payload"],
                let id = values["outbox_id"].flatMap({ Int64($0) }),
                let event = GraphEvent(outboxID: id, type: type, payload: payload)
            else { continue }
            events.insert(event)
        }
        return events.sorted { $0.outboxID < $1.outboxID }
    }
}

extension GraphEvent {
    /// An event from its payload text; nil unless the payload is `{followerId, followeeId, at}`, all strings.
    init?(outboxID: Int64, type: String, payload: String) {
        guard let fields = try? JSONDecoder().decode([String: String].self, from: Data(payload.utf8)),
            let follower = fields["followerId"], let followee = fields["followeeId"], let at = fields["at"]
        else { return nil }
        self.init(outboxID: outboxID, type: type, followerId: follower, followeeId: followee, at: at)
    }
}

/// `{following}`.
struct FollowResult: Decodable {
    var following: Bool
}

/// `{followers, following}`.
struct StatsResult: Decodable, Equatable {
    var followers: Int64
    var following: Int64
}

/// An element of `graph.statsMany`; the relation only when a viewer was named.
struct UserStatsResult: Decodable, Equatable {
    var userId: String
    var followers: Int64
    var following: Int64
    var isFollowed: Bool? = nil
    var followsYou: Bool? = nil
}

/// An element of `graph.relationships`.
struct RelationResult: Decodable, Equatable {
    var userId: String
    var isFollowed: Bool
    var followsYou: Bool
}

/// A page of ids.
struct IDPage: Decodable {
    var items: [String]
    var nextCursor: String?
}

/// A counter tasks share (an `Atomic` cannot be captured by the closures of a task group).
final class SharedCounter: Sendable {
    private let value: Atomic<Int>

    init(_ start: Int = 0) {
        value = Atomic(start)
    }

    /// Adds one and returns the value before.
    func next() -> Int {
        value.add(1, ordering: .relaxed).oldValue
    }

    var current: Int { value.load(ordering: .relaxed) }
}
