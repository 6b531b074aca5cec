import Locking
import Logging
import RPC

/// A tiny social-graph for the tests: answers `graph.statsMany` (with the relations when a viewer
/// is named) and `graph.relationships` from follows the tests set, and records every call, so tests
/// can count how auth batches them.
final class GraphStandIn: Sendable {
    struct Call: Sendable {
        var method: String
        var ids: [String]
        var viewerId: String?
        /// `_meta.service` of the call: auth must present its credential.
        var service: String?
    }

    private struct StatsParams: Codable, Sendable {
        var ids: [String]
        var viewerId: String?
    }
    private struct Stats: Codable, Sendable {
        var userId: String
        var followers: Int64
        var following: Int64
        var isFollowed: Bool?
        var followsYou: Bool?
    }
    private struct RelationsParams: Codable, Sendable {
        var viewerId: String
        var ids: [String]
    }
    private struct Relation: Codable, Sendable {
        var userId: String
        var isFollowed: Bool
        var followsYou: Bool
    }

    let port: Int
    private let state: StateBox
    private let task: Task<Void, any Error>

    private init(port: Int, state: StateBox, task: Task<Void, any Error>) {
        self.port = port
        self.state = state
        self.task = task
    }

    deinit { task.cancel() }

    /// Deterministic counts a test can predict: followers = id mod 1000, following = id mod 7.
    static func followers(of id: String) -> Int64 { (Int64(id) ?? 0) % 1000 }
    static func following(of id: String) -> Int64 { (Int64(id) ?? 0) % 7 }

    static func start() async throws -> GraphStandIn {
        let state = StateBox()
        var router = RPCRouter(service: "social-graph", version: "test", logger: Logger(label: "graph-stand-in"))
        router.register("graph.statsMany", summary: "Follower counts of many users.", access: .anonymous) {
            (params: StatsParams, context: RPCContext) in
            state.record(Call(method: "graph.statsMany", ids: params.ids, viewerId: params.viewerId, service: context.meta.service))
            let follows = state.follows.withLock { $0 }
            return params.ids.map { id in
                var stats = Stats(userId: id, followers: followers(of: id), following: following(of: id))
                if let viewer = params.viewerId {
                    stats.isFollowed = follows[viewer]?.contains(id) ?? false
                    stats.followsYou = follows[id]?.contains(viewer) ?? false
                }
                return stats
            }
        }
        router.register("graph.relationships", summary: "A viewer's relations to many users.", access: .anonymous) {
            (params: RelationsParams, context: RPCContext) in
            state.record(
                Call(method: "graph.relationships", ids: params.ids, viewerId: params.viewerId, service: context.meta.service))
            let follows = state.follows.withLock { $0 }
            return params.ids.map { id in
                Relation(
                    userId: id, isFollowed: follows[params.viewerId]?.contains(id) ?? false,
                    followsYou: follows[id]?.contains(params.viewerId) ?? false)
            }
        }
        let server = RPCServer(router: router, configuration: .init(port: 0), logger: Logger(label: "graph-stand-in"))
        let task = Task { try await server.run() }
        let port = try await server.listeningPort()
        return GraphStandIn(port: port, state: state, task: task)
    }

    /// Makes `follower` follow `followee` as far as auth can tell.
    func follow(_ follower: String, _ followee: String) {
        _ = state.follows.withLock { $0[follower, default: []].insert(followee) }
    }

    /// The calls so far whose ids include `id`.
    func calls(involving id: String) -> [Call] {
        state.calls.withLock { $0.filter { $0.ids.contains(id) } }
    }
}

/// The stand-in's state, shared by its handlers and the object tests hold.
private final class StateBox: Sendable {
    let calls = Locked<[GraphStandIn.Call]>([])
    /// follower id → the ids they follow.
    let follows = Locked<[String: Set<String>]>([:])

    func record(_ call: GraphStandIn.Call) {
        calls.withLock { $0.append(call) }
    }
}
