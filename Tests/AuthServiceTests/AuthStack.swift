import Foundation
import Logging
import Postgres
import RPC
import TestSupport

/// One running `aviary-auth` and a client of it.
struct AuthInstance: Sendable {
    let process: ServiceProcess
    let api: AuthAPI
    /// Its database, for the few tests that look at what is stored.
    let databaseURL: String

    /// A client of its database; the caller shuts it down.
    func database() throws -> PostgresClient {
        try PostgresClient(configuration: PostgresConfiguration(url: databaseURL), logger: Logger(label: "auth-tests"))
    }
}

/// The auth processes the tests share, each started on first use and kept for the whole run:
/// - `main`: social-graph unreachable (a free port nothing listens on), Google sign-in configured
///   with the test's own key, rate limits high, ended sessions swept every second;
/// - `withGraph`: social-graph is ``GraphStandIn``, Google sign-in not configured;
/// - `rateLimited`: low limits, its own Redis database so that other instances' calls cannot drain
///   its buckets.
actor AuthStack {
    static let shared = AuthStack()
    static let serviceSecret = "auth-tests-service-credential"
    /// The access-token signing seed every instance is given, so tests can sign tokens themselves.
    static let signingSeed: [UInt8] = (0..<32).map { UInt8(($0 * 37 + 11) % 256) }

    private var main: Task<AuthInstance, any Error>?
    private var graph: Task<(AuthInstance, GraphStandIn), any Error>?
    private var limited: Task<AuthInstance, any Error>?

    func main() async throws -> AuthInstance {
        let task = main ?? Task {
            let google = try await GoogleTestIssuer.shared()
            return try await Self.start([
                "AVIARY_SOCIAL_GRAPH_ADDRESSES": "127.0.0.1:\(try freePort())",
                "AVIARY_GOOGLE_CLIENT_ID": GoogleTestIssuer.clientID,
                "AVIARY_GOOGLE_JWKS_FILE": google.jwksFile,
                "AVIARY_AUTH_SESSION_SWEEP_SECONDS": "1",
            ])
        }
        main = task
        return try await task.value
    }

    func withGraph() async throws -> (AuthInstance, GraphStandIn) {
        let task = graph ?? Task {
            let standIn = try await GraphStandIn.start()
            let instance = try await Self.start(["AVIARY_SOCIAL_GRAPH_ADDRESSES": "127.0.0.1:\(standIn.port)"])
            return (instance, standIn)
        }
        graph = task
        return try await task.value
    }

    /// Login: 20 a minute per account, 30 per address; registration: 3 an hour per address.
    func rateLimited() async throws -> AuthInstance {
        let task = limited ?? Task {
            try await Self.start(
                [
                    "AVIARY_SOCIAL_GRAPH_ADDRESSES": "127.0.0.1:\(try freePort())",
                    "AVIARY_AUTH_LOGIN_PER_ACCOUNT_PER_MINUTE": "20",
                    "AVIARY_AUTH_LOGIN_PER_ADDRESS_PER_MINUTE": "30",
                    "AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR": "3",
                ], redisDatabase: 7)
        }
        limited = task
        return try await task.value
    }

    static func start(_ extra: [String: String], redisDatabase: Int? = nil) async throws -> AuthInstance {
        let postgres = try await TestServers.postgres()
        let redis = try await TestServers.redis()
        let database = try await postgres.makeDatabase()
        var environment = [
            "AVIARY_POSTGRES_URL": database,
            "AVIARY_REDIS_URL": redis.url + (redisDatabase.map { "/\($0)" } ?? ""),
            "AVIARY_RPC_PORT": "0",
            "AVIARY_ADMIN_PORT": "0",
            "AVIARY_SERVICE_SECRET": serviceSecret,
            "AVIARY_TOKEN_SIGNING_KEY": Data(signingSeed).base64EncodedString(),
            "AVIARY_AUTH_LOGIN_PER_ACCOUNT_PER_MINUTE": "100000",
            "AVIARY_AUTH_LOGIN_PER_ADDRESS_PER_MINUTE": "100000",
            "AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR": "100000",
        ]
        environment.merge(extra) { _, given in given }
        let process = try await ServiceProcess.start(executable: "aviary-auth", environment: environment)
        let client = RPCClient(configuration: .init(addresses: [process.rpcAddress]), logger: Logger(label: "auth-tests"))
        return AuthInstance(process: process, api: AuthAPI(client: client), databaseURL: database)
    }
}
