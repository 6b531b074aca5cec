import AviaryJSON
import ChannelSupport
import Foundation
import Locking
import Logging
import NIOCore
import NIOPosix

/// Calls one service that may run as several instances. Keeps a few connections to each address,
/// spreads calls over the healthy ones round-robin, takes an address out after it fails to
/// connect (retrying it with exponential backoff) or while its `system.health` fails or says it is
/// not ok (asked every ``Configuration/healthCheckInterval``), and retries an idempotent call once
/// on another instance when its connection was lost. A call whose connection closed before it was
/// sent is sent again whatever its kind: the server never saw it.
///
/// An address may be a DNS name that resolves to several instances (a Kubernetes headless Service,
/// a compose service scaled up): the name is resolved again every ``Configuration/resolveInterval``,
/// so instances that come are used and instances that go are dropped, their connections closed.
public final class RPCClient: Sendable {
    /// Pool options, each with its default.
    public struct Configuration: Sendable {
        /// `host:port` of every instance of the service; a host may be a DNS name standing for several.
        public var addresses: [String]
        public var connectionsPerAddress: Int = 2
        /// Used when a call names no timeout of its own.
        public var callTimeout: Duration = .seconds(10)
        public var connectTimeout: Duration = .seconds(2)
        public var maxFrameBytes: Int = 1 << 20
        /// First wait before an address that failed is tried again; doubles up to `maxBackoff`.
        public var initialBackoff: Duration = .milliseconds(100)
        public var maxBackoff: Duration = .seconds(5)
        /// How often DNS names among `addresses` are resolved again.
        public var resolveInterval: Duration = .seconds(15)
        /// Turns a host name into the IP addresses of its instances; `getaddrinfo` by default.
        public var resolve: @Sendable (_ host: String) async throws -> [String] = HostResolver.addresses(of:)
        /// How often each instance with an open connection is asked for `system.health`; nil never.
        public var healthCheckInterval: Duration? = .seconds(5)
        /// How long a health check may take before the instance counts as unhealthy.
        public var healthCheckTimeout: Duration = .seconds(2)

        public init(addresses: [String]) {
            self.addresses = addresses
        }
    }

    /// One instance: an IP address (or, until its name is first resolved, the name itself).
    private struct Endpoint {
        /// Stable while the endpoint exists; picks refer to it, as positions change when DNS does.
        var id: Int
        /// The configured name this endpoint stands for; nil for an address configured as an IP.
        var name: String?
        var host: String
        var port: Int
        var slots: [Slot?]
        var nextSlot = 0
        var failures = 0
        var downUntil: ContinuousClock.Instant?
        /// False while its last health check failed; calls then go elsewhere if they can.
        var healthy = true
    }

    /// A connection of an endpoint: the attempt that makes it, and what it made once a call saw it
    /// made (a call through the slot then takes it at once instead of awaiting the attempt against
    /// its deadline).
    private struct Slot {
        let attempt: Task<RPCClientConnection, any Error>
        var connection: RPCClientConnection?
    }

    /// A configured address whose host is a name.
    private struct NamedAddress {
        var name: String
        var port: Int
    }

    private struct State {
        var endpoints: [Endpoint] = []
        var next = 0
        var nextID = 0
        var shutDown = false
        var resolver: Task<Void, Never>?
        var healthChecker: Task<Void, Never>?

        mutating func add(host: String, port: Int, name: String?, slots: Int) {
            endpoints.append(
                Endpoint(id: nextID, name: name, host: host, port: port, slots: Array(repeating: nil, count: slots)))
            nextID += 1
        }

        func position(of id: Int) -> Int? {
            endpoints.firstIndex { $0.id == id }
        }
    }

    public let configuration: Configuration
    /// Slots are spread over the group's loops; a caller gets a slot on its own loop.
    private let affinity: EventLoopAffinity
    private let logger: Logger
    private let state: Locked<State>
    private let names: [NamedAddress]

    public init(configuration: Configuration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger) {
        self.configuration = configuration
        self.affinity = EventLoopAffinity(group: group)
        self.logger = logger
        var state = State()
        var names: [NamedAddress] = []
        let slots = max(1, configuration.connectionsPerAddress)
        for address in configuration.addresses {
            guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
                continue
            }
            let host = String(address[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            // Until a name is resolved, NIO resolves it at connect time, so the first calls need not wait.
            let isName = (try? SocketAddress(ipAddress: host, port: port)) == nil
            state.add(host: host, port: port, name: isName ? host : nil, slots: slots)
            if isName { names.append(NamedAddress(name: host, port: port)) }
        }
        self.names = names
        self.state = Locked(state)
        if !names.isEmpty {
            let interval = configuration.resolveInterval
            let resolver = Task { [weak self] in
                while !Task.isCancelled {
                    await self?.resolveNames()
                    try? await Task.sleep(for: interval)
                    if self == nil { return }
                }
            }
            self.state.withLock { $0.resolver = resolver }
        }
        if let interval = configuration.healthCheckInterval {
            let checker = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard let self else { return }
                    await self.checkHealth()
                }
            }
            self.state.withLock { $0.healthChecker = checker }
        }
    }

    /// Resolves every name again and brings the endpoints in line: new addresses are added, gone
    /// ones removed and their connections closed. A name that fails to resolve keeps what it had.
    func resolveNames() async {
        var resolved: [String: Set<String>] = [:]
        for name in Set(names.map(\.name)) {
            do {
                let addresses = try await configuration.resolve(name)
                if !addresses.isEmpty { resolved[name] = Set(addresses) }
            } catch {
                logger.debug("could not resolve a service address", metadata: ["host": "\(name)", "error": "\(error)"])
            }
        }
        guard !resolved.isEmpty else { return }
        let slots = max(1, configuration.connectionsPerAddress)
        let dropped = state.withLock { state -> [Task<RPCClientConnection, any Error>] in
            var dropped: [Task<RPCClientConnection, any Error>] = []
            for named in names {
                guard let addresses = resolved[named.name] else { continue }
                // The name's own endpoint (before its first resolution) and addresses no longer listed go.
                let goes = { (endpoint: Endpoint) in
                    endpoint.name == named.name && endpoint.port == named.port && !addresses.contains(endpoint.host)
                }
                for endpoint in state.endpoints where goes(endpoint) {
                    dropped += endpoint.slots.compactMap { $0?.attempt }
                }
                state.endpoints.removeAll(where: goes)
                for address in addresses.sorted()
                where !state.endpoints.contains(where: { $0.name == named.name && $0.host == address && $0.port == named.port }) {
                    state.add(host: address, port: named.port, name: named.name, slots: slots)
                }
            }
            return dropped
        }
        for task in dropped {
            if let connection = try? await task.value { await connection.close() }
        }
    }

    /// Sends a request and returns the response frame. `idempotent` calls that lose their
    /// connection are retried once on another instance. The call times out after `timeout` (by
    /// default the configuration's), or sooner when its `_meta.timeoutMs` leaves less: the budget a
    /// caller passes on is also how long it waits.
    public func send(
        _ method: String, params: RawJSON = .emptyObject, meta: RequestMeta = RequestMeta(), timeout: Duration? = nil,
        idempotent: Bool = false
    ) async throws -> RPCResponse {
        var timeout = timeout ?? configuration.callTimeout
        if let budget = meta.timeoutMs { timeout = min(timeout, .milliseconds(budget)) }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var excluded: Int?
        var retriedLostCall = false
        for attempt in 0..<3 {
            let (index, connection) = try await connection(excluding: excluded, before: deadline)
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw RPCError.outOfTimeConnecting }
            do {
                return try await connection.send(method, params: params, meta: meta, timeout: left)
            } catch let error as RPCError where (error == .callNotSent || error == .callNotTaken) && attempt < 2 {
                // Never sent (the connection had just closed, or is not read): safe to send again,
                // idempotent or not.
                excluded = index
                logger.debug("sending a call again: its connection closed, or stopped taking calls", metadata: ["rpc.method": "\(method)"])
            } catch let error as RPCError where error.reason == "unavailable" && idempotent && !retriedLostCall {
                retriedLostCall = true
                excluded = index
                logger.debug("retrying an idempotent call on another instance", metadata: ["rpc.method": "\(method)"])
            }
        }
        throw RPCError.unavailable("no instance of the service answered")
    }

    /// A connection of its own to one instance (a healthy, reachable one when there is one), outside
    /// the pool, for calls that leave state on their connection: subscriptions push on it and end
    /// when it closes. The caller closes it.
    public func dedicatedConnection() async throws(RPCError) -> RPCClientConnection {
        let now = ContinuousClock.now
        let candidates = state.withLock { state -> [(host: String, port: Int)] in
            guard !state.shutDown else { return [] }
            let start = state.next
            state.next += 1
            let count = state.endpoints.count
            let rotated = (0..<count).map { state.endpoints[(start + $0) % count] }
            let ready = rotated.filter { $0.healthy && ($0.downUntil.map { $0 <= now } ?? true) }
            return (ready + rotated.filter { e in !ready.contains { $0.id == e.id } }).map { ($0.host, $0.port) }
        }
        for candidate in candidates {
            if let connection = try? await RPCClientConnection.connect(
                host: candidate.host, port: candidate.port, maxFrameBytes: configuration.maxFrameBytes,
                connectTimeout: configuration.connectTimeout)
            {
                return connection
            }
        }
        throw RPCError.unavailable("no instance of the service is reachable")
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
        state.withLock { state in
            state.shutDown = true
            state.resolver?.cancel()
            state.healthChecker?.cancel()
        }
        for connection in await pooledConnections() { await connection.close() }
    }

    /// The connections of the pool that were made (whether still open or not).
    private func pooledConnections() async -> [RPCClientConnection] {
        let tasks = state.withLock { state in state.endpoints.flatMap { $0.slots.compactMap { $0?.attempt } } }
        var connections: [RPCClientConnection] = []
        for task in tasks {
            if let connection = try? await task.value { connections.append(connection) }
        }
        return connections
    }

    /// How many connections of the pool are open, for tests.
    func openConnectionCount() async -> Int {
        await pooledConnections().filter(\.isActive).count
    }

    /// A connection to an instance other than `excluded` (an endpoint id) when there is one; a
    /// `timeout` error when `deadline` comes while connecting (the attempt goes on for the pool).
    private func connection(excluding excluded: Int?, before deadline: ContinuousClock.Instant) async throws
        -> (Int, RPCClientConnection)
    {
        let count = state.withLock { $0.endpoints.count }
        guard count > 0 else { throw RPCError.unavailable("no address is configured for the service") }
        var lastError: (any Error)?
        // Each endpoint may fail to connect once; a pooled connection found closed (the instance
        // restarted) is replaced on the spot and does not count as a failure.
        var failures = 0
        var replaced = 0
        let slots = max(1, configuration.connectionsPerAddress)
        while failures < count {
            let picked = try pick(excluding: excluded)
            let task = picked.task
            var connected = picked.connection
            if connected == nil {
                do {
                    connected = try await value(of: { try await task.value }, before: deadline)
                } catch {
                    lastError = error
                    markDown(picked)
                    failures += 1
                    continue
                }
                if let connected { remember(connected, of: picked) }
            }
            // Out of time, not out of instances: the endpoint is not marked down.
            guard let connection = connected else {
                throw RPCError.outOfTimeConnecting
            }
            if connection.isActive {
                markHealthy(picked.endpoint)
                return (picked.endpoint, connection)
            }
            replace(picked)
            replaced += 1
            if replaced > count * slots { failures += 1 }
        }
        logger.debug("no instance reachable", metadata: ["error": "\(String(describing: lastError))"])
        throw RPCError.unavailable("no instance of the service is reachable")
    }

    private struct Pick {
        /// The endpoint's id.
        var endpoint: Int
        var slot: Int
        var task: Task<RPCClientConnection, any Error>
        /// What `task` made, when known.
        var connection: RPCClientConnection?
    }

    private func pick(excluding excluded: Int?) throws(RPCError) -> Pick {
        let now = ContinuousClock.now
        let configuration = self.configuration
        let affinity = self.affinity
        return try state.withLock { state throws(RPCError) -> Pick in
            guard !state.shutDown else { throw RPCError.unavailable("the client is shut down") }
            guard !state.endpoints.isEmpty else { throw RPCError.unavailable("no address is configured for the service") }
            let count = state.endpoints.count
            let ids = state.endpoints.map(\.id)
            let isExcluded = { (index: Int) in ids[index] == excluded }
            // Prefer reachable endpoints other than the excluded one whose health check passed, then
            // reachable ones whatever their health; else the one back soonest.
            var chosen: Int?
            for requireHealth in [true, false] where chosen == nil {
                for offset in 0..<count {
                    let index = (state.next + offset) % count
                    if isExcluded(index) && count > 1 { continue }
                    if let downUntil = state.endpoints[index].downUntil, downUntil > now { continue }
                    if requireHealth && !state.endpoints[index].healthy { continue }
                    chosen = index
                    break
                }
            }
            let index =
                chosen
                ?? state.endpoints.indices.min {
                    (isExcluded($0) ? 1 : 0, state.endpoints[$0].downUntil ?? now)
                        < (isExcluded($1) ? 1 : 0, state.endpoints[$1].downUntil ?? now)
                }!
            state.next = index + 1
            var endpoint = state.endpoints[index]
            let slot = affinity.slot(from: endpoint.nextSlot, of: endpoint.slots.count)
            endpoint.nextSlot = slot + 1
            let task: Task<RPCClientConnection, any Error>
            let connection: RPCClientConnection?
            if let existing = endpoint.slots[slot] {
                (task, connection) = (existing.attempt, existing.connection)
            } else {
                let host = endpoint.host
                let port = endpoint.port
                let loop = affinity.loop(forSlot: slot)
                task = Task {
                    try await RPCClientConnection.connect(
                        host: host, port: port, group: loop, maxFrameBytes: configuration.maxFrameBytes,
                        connectTimeout: configuration.connectTimeout)
                }
                endpoint.slots[slot] = Slot(attempt: task)
                connection = nil
            }
            state.endpoints[index] = endpoint
            return Pick(endpoint: endpoint.id, slot: slot, task: task, connection: connection)
        }
    }

    private func markHealthy(_ id: Int) {
        state.withLock { state in
            guard let index = state.position(of: id) else { return }
            state.endpoints[index].failures = 0
            state.endpoints[index].downUntil = nil
        }
    }

    /// Records the connection a slot's attempt made, while the slot still holds that attempt.
    private func remember(_ connection: RPCClientConnection, of pick: Pick) {
        state.withLock { state in
            guard let index = state.position(of: pick.endpoint), state.endpoints[index].slots[pick.slot]?.attempt == pick.task
            else { return }
            state.endpoints[index].slots[pick.slot]?.connection = connection
        }
    }

    /// Forgets a dead connection so the next call through its slot connects anew.
    private func replace(_ pick: Pick) {
        state.withLock { state in
            guard let index = state.position(of: pick.endpoint) else { return }
            if state.endpoints[index].slots[pick.slot]?.attempt == pick.task {
                state.endpoints[index].slots[pick.slot] = nil
            }
        }
    }

    private func markDown(_ pick: Pick) {
        let configuration = self.configuration
        state.withLock { state in
            guard let index = state.position(of: pick.endpoint) else { return }
            var endpoint = state.endpoints[index]
            if endpoint.slots[pick.slot]?.attempt == pick.task { endpoint.slots[pick.slot] = nil }
            endpoint.failures += 1
            let exponent = min(endpoint.failures - 1, 16)
            let backoff = min(configuration.initialBackoff * (1 << exponent), configuration.maxBackoff)
            endpoint.downUntil = ContinuousClock.now.advanced(by: backoff)
            state.endpoints[index] = endpoint
        }
    }

    /// Asks each instance with an open connection for `system.health`, all at once, and takes it
    /// out of turn while the answer is not `ok` or does not come within `healthCheckTimeout`; it is
    /// back in turn at its first `ok`. A server without the method answered, so it counts as healthy.
    func checkHealth() async {
        let targets = state.withLock { state in
            state.endpoints.compactMap { endpoint in endpoint.slots.compactMap { $0?.attempt }.first.map { (endpoint.id, $0) } }
        }
        await withTaskGroup(of: (Int, HealthVerdict).self) { group in
            for (id, task) in targets {
                group.addTask { (id, await self.health(task)) }
            }
            for await (id, verdict) in group {
                let healthy: Bool
                switch verdict {
                case .unknown: continue
                case .healthy: healthy = true
                case .unhealthy: healthy = false
                }
                let change = state.withLock { state -> String? in
                    guard !state.shutDown, let index = state.position(of: id), state.endpoints[index].healthy != healthy
                    else { return nil }
                    state.endpoints[index].healthy = healthy
                    return "\(state.endpoints[index].host):\(state.endpoints[index].port)"
                }
                guard let change else { continue }
                if case .unhealthy(let reason) = verdict {
                    logger.notice(
                        "an instance fails its health check; calls go elsewhere",
                        metadata: ["rpc.instance": "\(change)", "reason": "\(reason)"])
                } else {
                    logger.notice("an instance passes its health check again", metadata: ["rpc.instance": "\(change)"])
                }
            }
        }
    }

    private enum HealthVerdict: Sendable {
        case healthy
        case unhealthy(reason: String)
        /// No open connection to ask on: connecting and its failures are judged by calls.
        case unknown
    }

    private struct HealthStatus: Decodable {
        var status: String
    }

    private func health(_ task: Task<RPCClientConnection, any Error>) async -> HealthVerdict {
        guard let connection = try? await task.value, connection.isActive else { return .unknown }
        do {
            let response = try await connection.send("system.health", timeout: configuration.healthCheckTimeout)
            let status = try response.decode(HealthStatus.self).status
            return status == "ok" ? .healthy : .unhealthy(reason: "status \(status)")
        } catch let error as RPCError where error.code == RPCError.methodNotFound("").code {
            return .healthy
        } catch let error as RPCError where error.reason == "unavailable" {
            // The connection closed (the instance restarted, or this client is shutting down): calls
            // judge reconnecting, not the health check.
            return .unknown
        } catch {
            return .unhealthy(reason: "\(error)")
        }
    }

    /// The `host:port` of each instance now in the pool, for tests and diagnostics.
    public var instances: [String] {
        state.withLock { state in state.endpoints.map { "\($0.host):\($0.port)" } }
    }
}
