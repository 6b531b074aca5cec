import AviaryAPI
import Locking
import Logging
import RPC

/// A stand-in for the messaging service's internal `messaging.isMember`, so media's membership
/// checks can be tested on their own: a real JSON-RPC server on a free port answering from an
/// in-memory set of (conversation, user) pairs. It starts before the stack, so it learns the
/// stack's service credential afterwards (``accept(serviceCredential:)``).
final class MessagingStandIn: Sendable {
    let port: Int
    var address: String { "127.0.0.1:\(port)" }
    private let state: State
    private let serverTask: Task<Void, any Error>

    private struct Pair: Hashable {
        var conversation: Int64
        var user: Int64
    }

    private final class State: Sendable {
        let members = Locked<Set<Pair>>([])
        /// Conversations whose membership checks fail, with the error.
        let failures = Locked<[Int64: RPCError]>([:])
        let credential = Locked<String?>(nil)
    }

    private init(port: Int, state: State, serverTask: Task<Void, any Error>) {
        self.port = port
        self.state = state
        self.serverTask = serverTask
    }

    deinit {
        serverTask.cancel()
    }

    static func start() async throws -> MessagingStandIn {
        let state = State()
        let logger = Logger(label: "messaging-stand-in")
        var router = RPCRouter(
            service: "messaging", version: "stand-in", logger: logger, authenticator: Credential(state: state))
        router.register(MessagingAPI.isMember) { params, _ in
            if let failure = state.failures.withLock({ $0[params.conversationId.value] }) { throw failure }
            let pair = Pair(conversation: params.conversationId.value, user: params.userId.value)
            return MembershipResult(member: state.members.withLock { $0.contains(pair) })
        }
        let server = RPCServer(router: router, configuration: .init(port: 0), logger: logger)
        let task = Task { try await server.run() }
        let port = try await server.listeningPort()
        return MessagingStandIn(port: port, state: state, serverTask: task)
    }

    func accept(serviceCredential: String) {
        state.credential.withLock { $0 = serviceCredential }
    }

    /// Makes `user` a member of `conversation`.
    func add(_ user: EntityID, to conversation: Int64) {
        let pair = Pair(conversation: conversation, user: user.value)
        state.members.withLock { _ = $0.insert(pair) }
    }

    /// Makes every membership check of `conversation` fail with `error`.
    func fail(_ conversation: Int64, with error: RPCError) {
        state.failures.withLock { $0[conversation] = error }
    }

    private struct Credential: RPCAuthenticator {
        let state: State

        func authenticate(token: String) async throws(RPCError) -> RPCPrincipal {
            throw RPCError.unauthenticated("the stand-in takes no access tokens")
        }

        func isServiceCredential(_ credential: String) -> Bool {
            state.credential.withLock { $0 == credential }
        }
    }
}
