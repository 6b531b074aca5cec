import AviaryAPI
import Foundation
import Logging
import RPC
import Synchronization

/// A stand-in for the accounts service, for tests of services that call its internal
/// `auth.getUsers` while the real one cannot be relied on: a real JSON-RPC server (`RPCRouter` +
/// `RPCServer` on a free port) answering from an in-memory dictionary of users.
///
/// It keeps the real method's contract: `{ids, viewerId?, detail?}` with the service credential,
/// users in the order asked, unknown ids left out, `UserSummary`s by default and full `User`s with
/// `detail: "full"`. For full users it asks the social-graph service (once `useGraph(address:)` told
/// it where) for `graph.statsMany` and `graph.relationships`, as the real service does.
final class AuthStandIn: Sendable {
    /// The port its JSON-RPC server listens on.
    let port: Int
    /// "127.0.0.1:port", for `AVIARY_AUTH_ADDRESSES`.
    var address: String { "127.0.0.1:\(port)" }

    private let state: State
    private let serverTask: Task<Void, any Error>

    private final class State: Sendable {
        let serviceCredential: String
        let users = Mutex<[Int64: UserSummary]>([:])
        /// `auth.getUsers` calls answered, by viewer id (0 without one).
        let getUsersCalls = Mutex<[Int64: Int]>([:])
        let graph = Mutex<RPCClient?>(nil)

        init(serviceCredential: String) {
            self.serviceCredential = serviceCredential
        }
    }

    private init(port: Int, state: State, serverTask: Task<Void, any Error>) {
        self.port = port
        self.state = state
        self.serverTask = serverTask
    }

    deinit {
        serverTask.cancel()
    }

    /// Starts the server; internal calls must carry `serviceCredential` in `_meta.service`.
    static func start(serviceCredential: String) async throws -> AuthStandIn {
        let state = State(serviceCredential: serviceCredential)
        let logger = Logger(label: "auth-stand-in")
        var router = RPCRouter(
            service: "auth", version: "stand-in", logger: logger,
            authenticator: Credential(serviceCredential: serviceCredential))
        router.register(
            "auth.getUsers", summary: "Users by id, in the order asked; unknown ids left out.", access: .internal
        ) { (params: GetUsersParams, context: RPCContext) in
            try await Self.getUsers(params, context: context, state: state)
        }
        let server = RPCServer(router: router, configuration: .init(port: 0), logger: logger)
        let task = Task { try await server.run() }
        let port = try await server.listeningPort()
        return AuthStandIn(port: port, state: state, serverTask: task)
    }

    /// Makes `user` known.
    func add(_ user: UserSummary) {
        state.users.withLock { $0[user.id.value] = user }
    }

    /// Where the social-graph service listens, for the counts and relations of full users.
    func useGraph(address: String) {
        let client = RPCClient(configuration: .init(addresses: [address]), logger: Logger(label: "auth-stand-in"))
        state.graph.withLock { $0 = client }
    }

    /// How many `auth.getUsers` calls with `viewerId` it answered so far.
    func getUsersCalls(viewer: EntityID) -> Int {
        state.getUsersCalls.withLock { $0[viewer.value] ?? 0 }
    }

    private struct GetUsersParams: Decodable, Sendable {
        var ids: [EntityID]
        var viewerId: EntityID?
        var detail: String?
    }

    private struct Counts: Decodable {
        var userId: EntityID
        var followers: Int64
        var following: Int64
    }

    private struct Relation: Decodable {
        var userId: EntityID
        var isFollowed: Bool
        var followsYou: Bool
    }

    private static func getUsers(_ params: GetUsersParams, context: RPCContext, state: State) async throws -> RawJSON {
        state.getUsersCalls.withLock { $0[params.viewerId?.value ?? 0, default: 0] += 1 }
        guard params.ids.count <= 1000 else {
            throw RPCError.validation("ids must hold at most 1000 ids, got \(params.ids.count)", field: "ids")
        }
        let known = state.users.withLock { users in params.ids.compactMap { users[$0.value] } }
        guard params.detail == "full" else { return try RawJSON(encoding: known) }

        var counts: [EntityID: Counts] = [:]
        var relations: [EntityID: Relation] = [:]
        if let graph = state.graph.withLock({ $0 }), !known.isEmpty {
            let meta = RequestMeta(service: state.serviceCredential)
            let ids = known.map(\.id)
            for item in try await graph.call("graph.statsMany", params: ["ids": ids], meta: meta, as: [Counts].self) {
                counts[item.userId] = item
            }
            if let viewer = params.viewerId {
                let relationParams = RelationParams(viewerId: viewer, ids: ids)
                for item in try await graph.call("graph.relationships", params: relationParams, meta: meta, as: [Relation].self) {
                    relations[item.userId] = item
                }
            }
        }
        let users = known.map { summary in
            User(
                id: summary.id, username: summary.username, fullname: summary.fullname, bio: "",
                profileImageUrl: summary.profileImageUrl, createdAt: Date(timeIntervalSince1970: 1_700_000_000),
                stats: UserStats(followers: counts[summary.id]?.followers ?? 0, following: counts[summary.id]?.following ?? 0),
                isFollowed: relations[summary.id]?.isFollowed ?? false, followsYou: relations[summary.id]?.followsYou ?? false,
                isCurrentUser: summary.id == params.viewerId)
        }
        return try RawJSON(encoding: users)
    }

    private struct RelationParams: Encodable {
        var viewerId: EntityID
        var ids: [EntityID]
    }

    /// Accepts the service credential only; this stand-in takes no user tokens.
    private struct Credential: RPCAuthenticator {
        let serviceCredential: String

        func authenticate(token: String) async throws(RPCError) -> RPCPrincipal {
            throw RPCError.unauthenticated("the stand-in takes no access tokens")
        }

        func isServiceCredential(_ credential: String) -> Bool {
            credential == serviceCredential
        }
    }
}
