import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// Calls one service that may run as several instances. Keeps a few connections to each address,
/// spreads calls over the healthy ones round-robin, takes an address out after it fails to
/// connect (retrying it with exponential backoff), and retries an idempotent call once on
/// another instance when its connection was lost.
public final class RPCClient: Sendable {
    /// Pool options, each with its default.
    public struct Configuration: Sendable {
        /// `host:port` of every instance of the service.
        public var addresses: [String]
        public var connectionsPerAddress: Int = 2
        /// Used when a call names no timeout of its own.
        public var callTimeout: Duration = .seconds(10)
        public var connectTimeout: Duration = .seconds(2)
        public var maxFrameBytes: Int = 1 << 20
        /// First wait before an address that failed is tried again; doubles up to `maxBackoff`.
        public var initialBackoff: Duration = .milliseconds(100)
        public var maxBackoff: Duration = .seconds(5)

        public init(addresses: [String]) {
            self.addresses = addresses
        }
    }

    private struct Endpoint {
        var host: String
        var port: Int
        var slots: [Task<RPCClientConnection, any Error>?]
        var nextSlot = 0
        var failures = 0
        var downUntil: ContinuousClock.Instant?
    }

    private struct State {
        var endpoints: [Endpoint]
        var next = 0
        var shutDown = false
    }

    public let configuration: Configuration
    private let group: any EventLoopGroup
    private let logger: Logger
    private let state: Mutex<State>

    public init(configuration: Configuration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger) {
        self.configuration = configuration
        self.group = group
        self.logger = logger
        let endpoints = configuration.addresses.compactMap { address -> Endpoint? in
            guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
                return nil
            }
            let host = String(address[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            return Endpoint(host: host, port: port, slots: Array(repeating: nil, count: max(1, configuration.connectionsPerAddress)))
        }
        state = Mutex(State(endpoints: endpoints))
    }

    /// Sends a request and returns the response frame. `idempotent` calls that lose their
    /// connection are retried once on another instance.
    public func send(
        _ method: String, params: RawJSON = .emptyObject, meta: RequestMeta = RequestMeta(), timeout: Duration? = nil,
        idempotent: Bool = false
    ) async throws -> RPCResponse {
        let timeout = timeout ?? configuration.callTimeout
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var excluded: Int?
        for attempt in 0..<2 {
            let (index, connection) = try await connection(excluding: excluded)
            do {
                return try await connection.send(
                    method, params: params, meta: meta, timeout: ContinuousClock.now.duration(to: deadline))
            } catch let error as RPCError where error.reason == "unavailable" && idempotent && attempt == 0 {
                excluded = index
                logger.debug("retrying an idempotent call on another instance", metadata: ["rpc.method": "\(method)"])
            }
        }
        throw RPCError.unavailable("no instance of the service answered")
    }

    /// Calls `method` and decodes its result; error responses are thrown as `RPCError`.
    public func call<Result: Decodable>(
        _ method: String, params: some Encodable = RawJSON.emptyObject, meta: RequestMeta = RequestMeta(),
        timeout: Duration? = nil, idempotent: Bool = false, as type: Result.Type = Result.self
    ) async throws -> Result {
        try await send(method, params: RawJSON(encoding: params), meta: meta, timeout: timeout, idempotent: idempotent)
            .decode(type)
    }

    /// Closes every connection; later calls fail with `unavailable`.
    public func shutdown() async {
        let tasks = state.withLock { state in
            state.shutDown = true
            return state.endpoints.flatMap { $0.slots.compactMap { $0 } }
        }
        for task in tasks {
            if let connection = try? await task.value { await connection.close() }
        }
    }

    private func connection(excluding excluded: Int?) async throws -> (Int, RPCClientConnection) {
        let count = state.withLock { $0.endpoints.count }
        guard count > 0 else { throw RPCError.unavailable("no address is configured for the service") }
        var lastError: (any Error)?
        for _ in 0..<count {
            let picked = try pick(excluding: excluded)
            do {
                let connection = try await picked.task.value
                if connection.isActive {
                    markHealthy(picked.endpoint)
                    return (picked.endpoint, connection)
                }
                replace(picked)
            } catch {
                lastError = error
                markDown(picked)
            }
        }
        logger.debug("no instance reachable", metadata: ["error": "\(String(describing: lastError))"])
        throw RPCError.unavailable("no instance of the service is reachable")
    }

    private struct Pick {
        var endpoint: Int
        var slot: Int
        var task: Task<RPCClientConnection, any Error>
    }

    private func pick(excluding excluded: Int?) throws(RPCError) -> Pick {
        let now = ContinuousClock.now
        let configuration = self.configuration
        let group = self.group
        return try state.withLock { state throws(RPCError) -> Pick in
            guard !state.shutDown else { throw RPCError.unavailable("the client is shut down") }
            let count = state.endpoints.count
            // Prefer healthy endpoints other than the excluded one; else the one back soonest.
            var chosen: Int?
            for offset in 0..<count {
                let index = (state.next + offset) % count
                if index == excluded && count > 1 { continue }
                if let downUntil = state.endpoints[index].downUntil, downUntil > now { continue }
                chosen = index
                break
            }
            let index =
                chosen
                ?? state.endpoints.indices.min { ($0 == excluded ? 1 : 0, state.endpoints[$0].downUntil ?? now) < ($1 == excluded ? 1 : 0, state.endpoints[$1].downUntil ?? now) }!
            state.next = index + 1
            var endpoint = state.endpoints[index]
            let slot = endpoint.nextSlot % endpoint.slots.count
            endpoint.nextSlot += 1
            let task: Task<RPCClientConnection, any Error>
            if let existing = endpoint.slots[slot] {
                task = existing
            } else {
                let host = endpoint.host
                let port = endpoint.port
                task = Task {
                    try await RPCClientConnection.connect(
                        host: host, port: port, group: group, maxFrameBytes: configuration.maxFrameBytes,
                        connectTimeout: configuration.connectTimeout)
                }
                endpoint.slots[slot] = task
            }
            state.endpoints[index] = endpoint
            return Pick(endpoint: index, slot: slot, task: task)
        }
    }

    private func markHealthy(_ index: Int) {
        state.withLock { state in
            state.endpoints[index].failures = 0
            state.endpoints[index].downUntil = nil
        }
    }

    /// Forgets a dead connection so the next call through its slot connects anew.
    private func replace(_ pick: Pick) {
        state.withLock { state in
            if state.endpoints[pick.endpoint].slots[pick.slot] == pick.task {
                state.endpoints[pick.endpoint].slots[pick.slot] = nil
            }
        }
    }

    private func markDown(_ pick: Pick) {
        let configuration = self.configuration
        state.withLock { state in
            var endpoint = state.endpoints[pick.endpoint]
            if endpoint.slots[pick.slot] == pick.task { endpoint.slots[pick.slot] = nil }
            endpoint.failures += 1
            let exponent = min(endpoint.failures - 1, 16)
            let backoff = min(configuration.initialBackoff * (1 << exponent), configuration.maxBackoff)
            endpoint.downUntil = ContinuousClock.now.advanced(by: backoff)
            state.endpoints[pick.endpoint] = endpoint
        }
    }
}
