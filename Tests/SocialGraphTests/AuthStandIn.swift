import AviaryAPI
import Foundation
import Locking
import Logging
import RPC

/// A stand-in for the accounts service, for tests of services that call its internal
/// `auth.getUsers` and `auth.getProfiles` while the real one cannot be relied on: a real JSON-RPC
/// server (`RPCRouter` + `RPCServer` on a free port) answering from an in-memory dictionary of
/// users, registered for the contract's own descriptors.
///
/// It keeps the real methods' contract: the service credential, users in the order asked, unknown
/// ids left out. For full profiles it asks the social-graph service (once `useGraph(address:)` told
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
        let users = Locked<[Int64: UserSummary]>([:])
        /// `auth.getProfiles` calls answered, by viewer id (0 without one).
        let profileCalls = Locked<[Int64: Int]>([:])
        let graph = Locked<RPCClient?>(nil)

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
        router.register(AuthAPI.getUsers) { params, _ in
            state.users.withLock { users in (params.ids ?? []).compactMap { users[$0.value] } }
        }
        router.register(AuthAPI.getProfiles) { params, context in
            try await Self.profiles(params, context: context, state: state)
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

    /// How many `auth.getProfiles` calls with `viewerId` it answered so far.
    func profileCalls(viewer: EntityID) -> Int {
        state.profileCalls.withLock { $0[viewer.value] ?? 0 }
    }

    private static func profiles(_ params: GetProfilesParams, context: RPCContext, state: State) async throws -> [User] {
        state.profileCalls.withLock { $0[params.viewerId?.value ?? 0, default: 0] += 1 }
        guard params.ids.count <= 1000 else {
            throw RPCError.validation("ids must hold at most 1000 ids, got \(params.ids.count)", field: "ids")
        }
        let known = state.users.withLock { users in params.ids.compactMap { users[$0.value] } }

        var counts: [EntityID: UserFollowStats] = [:]
        var relations: [EntityID: UserRelationship] = [:]
        if let graph = state.graph.withLock({ $0 }), !known.isEmpty {
            let meta = RequestMeta(service: state.serviceCredential)
            let ids = known.map(\.id)
            let stats = GraphAPI.statsMany
            for item in try await graph.call(stats.name, params: StatsBatchParams(ids: ids), meta: meta, as: [UserFollowStats].self) {
                counts[item.userId] = item
            }
            if let viewer = params.viewerId {
                let relationships = GraphAPI.relationships
                for item in try await graph.call(
                    relationships.name, params: RelationshipBatchParams(viewerId: viewer, ids: ids), meta: meta,
                    as: [UserRelationship].self)
                {
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
        return users
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
