import Locking
import Logging

/// A Redis Cluster's nodes, and which master serves each slot.
///
/// Each command goes to the master of its keys' slot (``ClusterPlan``): a pipeline is sent as one
/// pipeline per node, all at once, and the replies are put back in order. A `MOVED` reply sends
/// the command on to the node named (and has the slot map read again); an `ASK` reply sends it
/// there once, after `ASKING` (a slot being migrated). The slot map comes from `CLUSTER SHARDS`,
/// asked of any node that answers (the known nodes, then the seeds): at the first command, after a
/// redirection or a node that could not be reached (at most every `minimumRefreshGap`), and every
/// `refreshInterval`.
///
/// A node that fails keeps its breaker (``RedisNode``): while its replica is promoted (the
/// cluster's node timeout and an election, about two seconds with `cluster-node-timeout 2000`),
/// the commands of its slots fail at once with `.connectionFailed`, and those of other slots go on.
/// A read-only command that failed on a node is sent once more when a fresh slot map names another
/// master for its slot (the failover happened); a write is not, as it may have been applied.
final class RedisCluster: Sendable {
    /// Which master serves each slot.
    struct SlotMap: Sendable {
        /// Per slot, its master's position in `masters`; -1 for a slot no master serves.
        var owners: [Int16]
        var masters: [RedisEndpoint]
        var replicas: [RedisEndpoint]

        func owner(of slot: Int) -> RedisEndpoint? {
            let index = Int(owners[slot])
            return index >= 0 ? masters[index] : nil
        }

        mutating func move(_ slot: Int, to endpoint: RedisEndpoint) {
            if let index = masters.firstIndex(of: endpoint) {
                owners[slot] = Int16(index)
            } else {
                masters.append(endpoint)
                owners[slot] = Int16(masters.count - 1)
            }
        }
    }

    private struct State {
        var map: SlotMap?
        var nodes: [RedisEndpoint: RedisNode] = [:]
        var refresh: Task<SlotMap?, Never>?
        var lastRefreshRequest: ContinuousClock.Instant?
        var timer: Task<Void, Never>?
        var nextAnyMaster = 0
        var isClosed = false
    }

    static let refreshInterval = Duration.seconds(5)
    static let minimumRefreshGap = Duration.milliseconds(100)
    static let maximumRedirections = 5

    private let configuration: RedisConfiguration
    private let seeds: [RedisEndpoint]
    private let logger: Logger
    private let state = Locked(State())

    init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        if case .cluster(let seeds) = configuration.deployment {
            self.seeds = seeds
        } else {
            self.seeds = [RedisEndpoint(host: configuration.host, port: configuration.port)]
        }
        var logger = logger
        logger[metadataKey: "redis.server"] = "\(configuration.server)"
        self.logger = logger
    }

    /// Sends `commands` and returns their replies in order (error replies in place); see the type.
    ///
    /// - Throws: `RedisError` when a node fails (`.connectionFailed`, `.timeout`, …), or when no
    ///   node answers for the slot map; `.closed` after `close()`.
    func execute(_ commands: [[RedisArgument]]) async throws -> [RESPValue] {
        var map = try await currentMap()
        let plan = ClusterPlan(commands)
        let units = plan.units
        var replies = [[RESPValue]?](repeating: nil, count: units.count)
        var destinations = [Destination](repeating: .everyMaster, count: units.count)
        for (index, unit) in units.enumerated() {
            if unit.followsEarlier {
                destinations[index] = .earlierNodes
            } else if !unit.everyMaster {
                destinations[index] = .node(try endpoint(for: unit.slot, in: map), asking: false)
            }
        }
        var retriedAfterFailure = false
        for round in 0...Self.maximumRedirections {
            let pending = replies.indices.filter { replies[$0] == nil }
            if pending.isEmpty { break }
            let (answered, failed) = try await send(units, pending, to: destinations, masters: map.masters)
            if let first = failed.first {
                // A node that failed may have been replaced (a failover): what only reads goes
                // once to its slot's master in a fresh slot map, when that is another node.
                guard !retriedAfterFailure,
                    failed.allSatisfy({ units[$0.unit].commands.allSatisfy(RedisCommandSafety.isReadOnly) }),
                    let (fresh, owners) = await newMasters(of: failed.map(\.unit), units, destinations)
                else { throw first.error }
                retriedAfterFailure = true
                map = fresh
                for (unit, owner) in owners { destinations[unit] = .node(owner, asking: false) }
                logger.notice(
                    "a cluster node failed; reading its slots from the master the slot map names now",
                    metadata: ["error": "\(String(reflecting: first.error))"])
            }
            var redirected = false
            for (index, unitReplies) in answered {
                guard round < Self.maximumRedirections, let redirection = Redirection(in: unitReplies) else {
                    replies[index] = unitReplies
                    continue
                }
                redirected = true
                switch redirection {
                case .moved(let slot, let target):
                    map.move(slot, to: target)
                    state.withLock { state in state.map?.move(slot, to: target) }
                    destinations[index] = .node(target, asking: false)
                case .ask(let target) where units[index].commands.count == 1:
                    destinations[index] = .node(target, asking: true)
                case .ask:
                    // A MULTI block whose slot is being migrated: wait for the migration to move on.
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            if redirected { requestRefresh() }
        }
        return plan.replies(from: replies.map { $0 ?? [] })
    }

    /// How long a read that failed on a node waits for a slot map naming another master.
    static let failoverPatience = Duration.seconds(2)

    /// A fresh slot map naming, for each of the `failed` units, a master other than the node it
    /// went to. The node asked may learn of a failover a moment after others: the map is read
    /// again for up to `failoverPatience`. Nil when it never names them all elsewhere.
    private func newMasters(of failed: [Int], _ units: [ClusterPlan.Unit], _ destinations: [Destination]) async
        -> (map: SlotMap, owners: [Int: RedisEndpoint])?
    {
        let deadline = ContinuousClock.now + Self.failoverPatience
        while ContinuousClock.now < deadline {
            if let fresh = await refreshed() {
                var owners: [Int: RedisEndpoint] = [:]
                for unit in failed {
                    guard case .node(let before, _) = destinations[unit],
                        let after = try? endpoint(for: units[unit].slot, in: fresh), after != before
                    else { break }
                    owners[unit] = after
                }
                if owners.count == Set(failed).count { return (fresh, owners) }
            }
            guard (try? await Task.sleep(for: .milliseconds(100))) != nil else { return nil }
        }
        return nil
    }

    /// Where a unit goes.
    private enum Destination {
        case node(RedisEndpoint, asking: Bool)
        case everyMaster
        /// Every node an earlier unit of the round went to (any master when none did).
        case earlierNodes
    }

    /// A `MOVED` or `ASK` reply (also the subscriber's, to a refused `SSUBSCRIBE`).
    enum Redirection {
        case moved(slot: Int, to: RedisEndpoint)
        case ask(to: RedisEndpoint)

        /// The first redirection among a unit's replies.
        init?(in replies: [RESPValue]) {
            for case .error(let message) in replies {
                if let redirection = Redirection(message) {
                    self = redirection
                    return
                }
            }
            return nil
        }

        /// The redirection an error's message is (`MOVED <slot> <host>:<port>`, `ASK …`); nil for another error.
        init?(_ message: String) {
            let words = message.split(separator: " ")
            guard words.count == 3, words[0] == "MOVED" || words[0] == "ASK", let slot = Int(words[1]),
                (0..<RedisSlot.count).contains(slot), let colon = words[2].lastIndex(of: ":"),
                let port = Int(words[2][words[2].index(after: colon)...])
            else { return nil }
            var host = words[2][..<colon]
            if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
            let target = RedisEndpoint(host: String(host), port: port)
            self = words[0] == "MOVED" ? .moved(slot: slot, to: target) : .ask(to: target)
        }
    }

    /// Sends the `pending` units, each node's as one pipeline, the nodes at once; returns each
    /// unit's replies. A unit sent to several nodes gets the first error among their replies, else
    /// the smallest count (`WAIT`'s replicas), else the first node's reply.
    private func send(
        _ units: [ClusterPlan.Unit], _ pending: [Int], to destinations: [Destination], masters: [RedisEndpoint]
    ) async throws -> (answered: [(Int, [RESPValue])], failed: [(unit: Int, error: RedisError)]) {
        var batches: [RedisEndpoint: [(unit: Int, asking: Bool)]] = [:]
        var order: [RedisEndpoint] = []
        func add(_ unit: Int, to endpoint: RedisEndpoint, asking: Bool) {
            if batches[endpoint] == nil { order.append(endpoint) }
            batches[endpoint, default: []].append((unit, asking))
        }
        for index in pending {
            switch destinations[index] {
            case .node(let endpoint, let asking): add(index, to: endpoint, asking: asking)
            case .everyMaster: for master in masters { add(index, to: master, asking: false) }
            case .earlierNodes:
                let earlier = order.isEmpty ? Array(masters.prefix(1)) : order
                for endpoint in earlier { add(index, to: endpoint, asking: false) }
            }
        }
        let nodes = try order.map { try node(at: $0) }
        let results = try await withThrowingTaskGroup(of: (Int, Result<[RESPValue], RedisError>).self) { group in
            for (position, node) in nodes.enumerated() {
                let batch = batches[order[position], default: []]
                var commands: [[RedisArgument]] = []
                for item in batch {
                    if item.asking { commands.append(["ASKING"]) }
                    commands += units[item.unit].commands
                }
                group.addTask {
                    do {
                        return (position, .success(try await node.execute(commands)))
                    } catch let error as RedisError {
                        if error.code == .connectionFailed || error.code == .timeout { self.requestRefresh() }
                        return (position, .failure(error))
                    }
                }
            }
            var results = [Result<[RESPValue], RedisError>](repeating: .success([]), count: nodes.count)
            for try await (position, result) in group { results[position] = result }
            return results
        }
        var answered: [Int: [RESPValue]] = [:]
        var failed: [(unit: Int, error: RedisError)] = []
        for (position, endpoint) in order.enumerated() {
            guard case .success(let nodeReplies) = results[position] else {
                if case .failure(let error) = results[position] {
                    failed += batches[endpoint, default: []].map { ($0.unit, error) }
                }
                continue
            }
            var offset = 0
            for item in batches[endpoint, default: []] {
                if item.asking { offset += 1 }
                let count = units[item.unit].commands.count
                let replies = Array(nodeReplies[offset..<offset + count])
                offset += count
                if let earlier = answered[item.unit] {
                    // One of several nodes' replies: an error wins, then the smaller count.
                    switch (earlier.first, replies.first) {
                    case (.error, _): break
                    case (_, .error): answered[item.unit] = replies
                    case (.integer(let before), .integer(let now)) where now < before: answered[item.unit] = replies
                    default: break
                    }
                } else {
                    answered[item.unit] = replies
                }
            }
        }
        // A unit sent to several nodes fails when one of them did.
        let failedUnits = Set(failed.map(\.unit))
        return (answered.filter { !failedUnits.contains($0.key) }.sorted { $0.key < $1.key }, failed)
    }

    /// The master of `slot`, or the next master in turn for a unit without keys.
    private func endpoint(for slot: Int?, in map: SlotMap) throws -> RedisEndpoint {
        if let slot {
            guard let owner = map.owner(of: slot) else {
                requestRefresh()
                throw RedisError.refusal("CLUSTERDOWN Hash slot \(slot) is not served by any known master")
            }
            return owner
        }
        guard !map.masters.isEmpty else { throw RedisError.refusal("CLUSTERDOWN no master is known") }
        let turn = state.withLock { state in
            defer { state.nextAnyMaster &+= 1 }
            return state.nextAnyMaster
        }
        return map.masters[turn % map.masters.count]
    }

    /// The connections to `endpoint`, opened on first use.
    private func node(at endpoint: RedisEndpoint) throws(RedisError) -> RedisNode {
        try state.withLock { state throws(RedisError) -> RedisNode in
            guard !state.isClosed else { throw RedisError(.closed) }
            if let node = state.nodes[endpoint] { return node }
            let node = RedisNode(configuration: configuration.server(at: endpoint), logger: logger)
            state.nodes[endpoint] = node
            return node
        }
    }

    // MARK: The slot map

    /// The slot map, read first if there is none yet.
    private func currentMap() async throws -> SlotMap {
        let known = try state.withLock { state throws(RedisError) -> SlotMap? in
            guard !state.isClosed else { throw RedisError(.closed) }
            return state.map
        }
        if let known { return known }
        guard let map = await refreshed() else {
            throw RedisError(.connectionFailed, detail: "no node of the cluster answered CLUSTER SHARDS")
        }
        return map
    }

    /// Reads the slot map again unless it was asked for within `minimumRefreshGap`; does not wait.
    private func requestRefresh() {
        let now = ContinuousClock.now
        let due = state.withLock { state in
            guard !state.isClosed else { return false }
            if let last = state.lastRefreshRequest, last.duration(to: now) < Self.minimumRefreshGap { return false }
            state.lastRefreshRequest = now
            return true
        }
        if due { Task { _ = await self.refreshed() } }
    }

    /// Reads the slot map (or joins the read under way) and keeps it; nil when no node answered.
    private func refreshed() async -> SlotMap? {
        let task = state.withLock { state -> Task<SlotMap?, Never>? in
            guard !state.isClosed else { return nil }
            if state.timer == nil {
                state.timer = Task { [weak self] in
                    while !Task.isCancelled {
                        try? await Task.sleep(for: Self.refreshInterval)
                        guard let self else { return }
                        _ = await self.refreshed()
                    }
                }
            }
            if let running = state.refresh { return running }
            let task = Task { await self.readSlotMap() }
            state.refresh = task
            return task
        }
        guard let task else { return nil }
        let map = await task.value
        let retired = state.withLock { state -> [RedisNode] in
            if state.refresh == task { state.refresh = nil }
            guard let map, !state.isClosed else { return [] }
            state.map = map
            let kept = Set(map.masters + map.replicas)
            let gone = state.nodes.filter { !kept.contains($0.key) }
            for endpoint in gone.keys { state.nodes.removeValue(forKey: endpoint) }
            return Array(gone.values)
        }
        for node in retired { node.pool.beginClosing() }
        return map
    }

    /// `CLUSTER SHARDS` from the first node that answers: the known masters and replicas, then the
    /// seeds.
    private func readSlotMap() async -> SlotMap? {
        let known = state.withLock { state in (state.map?.masters ?? []) + (state.map?.replicas ?? []) }
        var asked = Set<RedisEndpoint>()
        for endpoint in known + seeds where asked.insert(endpoint).inserted {
            if state.withLock({ $0.isClosed }) { return nil }
            do {
                let reply = try await node(at: endpoint).execute([["CLUSTER", "SHARDS"]])[0]
                if let map = Self.slotMap(shards: reply) { return map }
                logger.warning("a cluster node answered CLUSTER SHARDS in an unexpected shape", metadata: ["redis.node": "\(endpoint)"])
            } catch {
                logger.debug(
                    "a cluster node could not tell the slot map",
                    metadata: ["redis.node": "\(endpoint)", "error": "\(String(reflecting: error))"])
            }
        }
        logger.warning("no node of the cluster answered CLUSTER SHARDS")
        return nil
    }

    /// The slot map in a `CLUSTER SHARDS` reply (Redis 7): per shard, its slot ranges and its
    /// nodes, of which the master serves the slots (one not marked failed, when there is one).
    static func slotMap(shards reply: RESPValue) -> SlotMap? {
        guard let shards = reply.array else { return nil }
        var map = SlotMap(owners: Array(repeating: -1, count: RedisSlot.count), masters: [], replicas: [])
        for shard in shards {
            guard let fields = shard.fields, let ranges = fields["slots"]?.array, let nodes = fields["nodes"]?.array else {
                return nil
            }
            var master: (endpoint: RedisEndpoint, failed: Bool)?
            for node in nodes {
                guard let node = node.fields, let port = node["port"]?.int ?? node["tls-port"]?.int,
                    let ip = node["ip"]?.string
                else { return nil }
                let announced = node["endpoint"]?.string
                let host = announced.flatMap { $0.isEmpty || $0 == "?" ? nil : $0 } ?? ip
                let endpoint = RedisEndpoint(host: host, port: port)
                let failed = node["health"]?.string == "fail" || node["health"]?.string == "failed"
                if node["role"]?.string == "master", master == nil || (master?.failed == true && !failed) {
                    if let previous = master { map.replicas.append(previous.endpoint) }
                    master = (endpoint, failed)
                } else {
                    map.replicas.append(endpoint)
                }
            }
            guard let master else { continue }
            map.masters.append(master.endpoint)
            let index = Int16(map.masters.count - 1)
            let bounds = ranges.compactMap(\.int)
            guard bounds.count == ranges.count, bounds.count % 2 == 0 else { return nil }
            for pair in stride(from: 0, to: bounds.count, by: 2) {
                let (low, high) = (bounds[pair], bounds[pair + 1])
                guard 0 <= low, low <= high, high < RedisSlot.count else { return nil }
                for slot in low...high { map.owners[slot] = index }
            }
        }
        return map.masters.isEmpty ? nil : map
    }

    // MARK: Closing

    /// Fails later commands with `.closed`, lets commands in flight finish and closes every node's
    /// connections.
    func close() async {
        for node in beginClosing() { await node.pool.close() }
    }

    /// The part of ``close()`` that does not wait: returns the nodes being closed.
    @discardableResult
    func beginClosing() -> [RedisNode] {
        let (nodes, timer) = state.withLock { state in
            state.isClosed = true
            defer {
                state.nodes = [:]
                state.timer = nil
            }
            return (Array(state.nodes.values), state.timer)
        }
        timer?.cancel()
        for node in nodes { node.pool.beginClosing() }
        return nodes
    }
}
