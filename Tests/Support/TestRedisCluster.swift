import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Redis servers of the tests' own that work together: a six-node Redis Cluster (three masters,
/// three replicas, made with `redis-cli --cluster create`), or a master and its replica watched by
/// three sentinels. Each node is a `redis-server` in a folder of its own, on a random port of
/// 127.0.0.1, without persistence; they stop when the last reference goes away.
public final class TestRedisGroup: Sendable {
    /// A node's port and its server.
    private struct Node: Sendable {
        let port: Int
        let lifecycle: ServerLifecycle
    }

    /// The data nodes' ports: the cluster's six, or the Sentinel set's master then replica.
    public let ports: [Int]
    /// The sentinels' ports (none for a cluster).
    public let sentinelPorts: [Int]
    /// `redis+cluster://` with the first three nodes as seeds, or `redis+sentinel://…/aviary`.
    public let url: String
    private let nodes: [Node]

    private init(nodes: [Node], sentinels: Int, url: String) {
        self.nodes = nodes
        self.ports = nodes.dropLast(sentinels).map(\.port)
        self.sentinelPorts = nodes.suffix(sentinels).map(\.port)
        self.url = url
    }

    /// The cluster's node timeout: a master that has not answered for this long is failed over.
    public static let nodeTimeoutMilliseconds = 1000

    /// Starts six nodes, joins them into a cluster of three masters with a replica each, and waits
    /// until every node says the cluster is ok.
    public static func launchCluster() async throws -> TestRedisGroup {
        var nodes: [Node] = []
        for _ in 0..<6 {
            // The node's cluster bus listens 10000 above its port: both must be free, and out of
            // the range the kernel gives outgoing connections.
            let port = try freePort(withPartnerAt: 10_000)
            nodes.append(
                try await node(
                    port: port,
                    [
                        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", String(nodeTimeoutMilliseconds), "--cluster-replica-validity-factor", "0",
                    ]))
        }
        let group = TestRedisGroup(
            nodes: nodes, sentinels: 0, url: "redis+cluster://" + nodes.prefix(3).map { "127.0.0.1:\($0.port)" }.joined(separator: ","))
        let created = try await Command(
            arguments: [try cliPath(), "--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" } + [
                "--cluster-replicas", "1", "--cluster-yes",
            ]
        ).run()
        guard created.status == 0 else { throw TestSupportError("redis-cli --cluster create failed:\n\(created.output)") }
        try await group.waitUntilClusterIsOK()
        return group
    }

    /// Starts a master, its replica, and three sentinels watching it as `aviary` (quorum 2, down
    /// after 1 s), and waits until the sentinels see the replica.
    public static func launchSentinel() async throws -> TestRedisGroup {
        let masterPort = try freePort()
        let master = try await node(port: masterPort, [])
        let replica = try await node(port: try freePort(), ["--replicaof", "127.0.0.1", String(masterPort)])
        var sentinels: [Node] = []
        for _ in 0..<3 {
            let port = try freePort()
            let folder = try TemporaryFolder.create("sentinel")
            let configuration = folder.file("sentinel.conf")
            try """
            port \(port)
            bind 127.0.0.1
            sentinel monitor aviary 127.0.0.1 \(masterPort) 2
            sentinel down-after-milliseconds aviary 1000
            sentinel failover-timeout aviary 5000
            sentinel parallel-syncs aviary 1

            """.write(toFile: configuration, atomically: true, encoding: .utf8)
            sentinels.append(try await node(port: port, folder: folder, command: [try serverPath(), configuration, "--sentinel"]))
        }
        let url = "redis+sentinel://" + sentinels.map { "127.0.0.1:\($0.port)" }.joined(separator: ",") + "/aviary"
        let group = TestRedisGroup(nodes: [master, replica] + sentinels, sentinels: 3, url: url)
        let ready = await eventually(timeout: .seconds(30), interval: .milliseconds(100)) {
            let replicas = (try? await group.cli(port: sentinels[0].port, ["SENTINEL", "REPLICAS", "aviary"])) ?? ""
            return replicas.contains(String(replica.port))
        }
        guard ready else { throw TestSupportError("the sentinels did not see the replica within 30 s") }
        return group
    }

    /// Runs `redis-cli` against the node at `port` and returns its output.
    @discardableResult
    public func cli(port: Int, _ arguments: [String]) async throws -> String {
        try await Command(arguments: [try Self.cliPath(), "-h", "127.0.0.1", "-p", String(port)] + arguments).output()
    }

    /// The cluster's masters that are not marked failed, by port, as a running node sees them.
    public func masters() async throws -> [Int] {
        for node in nodes where await node.lifecycle.isRunning {
            guard let text = try? await cli(port: node.port, ["CLUSTER", "NODES"]), !text.isEmpty else { continue }
            return Self.nodeLines(text).compactMap { node -> Int? in
                // Flags such as "myself,master" or "master,fail" ("fail?" is only suspected).
                guard node.flags.contains("master"), !node.flags.contains("fail") else { return nil }
                return node.port
            }
        }
        throw TestSupportError("no cluster node answered CLUSTER NODES")
    }

    /// The port of the node whose master is `port`'s, for a cluster.
    public func replica(of port: Int) async throws -> Int? {
        let nodes = Self.nodeLines(try await cli(port: port, ["CLUSTER", "NODES"]))
        guard let me = nodes.first(where: { $0.flags.contains("myself") }) else { return nil }
        return nodes.first { $0.master == me.id }?.port
    }

    /// The lines of `CLUSTER NODES`: `<id> <ip:port@bus-port> <flags> <master id or -> …`.
    private static func nodeLines(_ text: String) -> [(id: Substring, port: Int?, flags: [Substring], master: Substring)] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count > 3 else { return nil }
            let port = fields[1].split(separator: "@")[0].split(separator: ":").last.flatMap { Int($0) }
            return (fields[0], port, fields[2].split(separator: ","), fields[3])
        }
    }

    /// Kills the node at `port` (SIGKILL): its connections drop, and it answers nothing until
    /// ``start(port:)``.
    public func kill(port: Int) async throws {
        guard let node = nodes.first(where: { $0.port == port }) else { throw TestSupportError("no node on port \(port)") }
        await node.lifecycle.signal(SIGKILL)
        try await node.lifecycle.stop()
    }

    /// Starts the node at `port` again (a cluster node rejoins as its shard's replica).
    public func start(port: Int) async throws {
        guard let node = nodes.first(where: { $0.port == port }) else { throw TestSupportError("no node on port \(port)") }
        try await node.lifecycle.start()
    }

    /// Waits until every running node of the cluster says `cluster_state:ok`, and every running
    /// replica has its master's data (its replication link is up).
    /// When it is not, the error shows each node's view and the log of the first node not ok.
    public func waitUntilClusterIsOK(timeout: Duration = .seconds(60)) async throws {
        let ok = await eventually(timeout: timeout, interval: .milliseconds(100)) {
            await self.firstNodeNotOK() == nil
        }
        guard !ok else { return }
        var report = "the cluster was not ok within \(timeout)"
        for node in nodes where await node.lifecycle.isRunning {
            let nodes = (try? await cli(port: node.port, ["CLUSTER", "NODES"])) ?? "(no answer)"
            report += "\n--- CLUSTER NODES as \(node.port) sees it ---\n\(nodes)"
        }
        if let node = await firstNodeNotOK() {
            report += "\n\(node.port) is not ok\n\(logTail(await node.lifecycle.log))"
        }
        throw TestSupportError(report)
    }

    /// A running node that does not say `cluster_state:ok`, a replica whose link to its master is
    /// down, or a node whose map of the slots differs from the first's: a slot just moved (a test
    /// of migration moves one and back) reaches the replicas by gossip, and a replica promoted
    /// before it heard would not claim that slot, leaving the cluster down.
    private func firstNodeNotOK() async -> Node? {
        var agreed: String?
        for node in nodes where await node.lifecycle.isRunning {
            let info = (try? await cli(port: node.port, ["CLUSTER", "INFO"])) ?? ""
            guard info.contains("cluster_state:ok") else { return node }
            let replication = (try? await cli(port: node.port, ["INFO", "replication"])) ?? ""
            if replication.contains("role:slave"), !replication.contains("master_link_status:up") { return node }
            let map = Self.slotMap((try? await cli(port: node.port, ["CLUSTER", "NODES"])) ?? "")
            if let agreed, map != agreed { return node }
            agreed = map
        }
        return nil
    }

    /// The masters and their slot ranges in a `CLUSTER NODES` answer, in a stable order (slots in
    /// migration, in brackets, left out).
    private static func slotMap(_ nodes: String) -> String {
        nodes.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ")
            guard fields.count > 8, fields[2].contains("master") else { return nil }
            let ranges = fields[8...].filter { !$0.hasPrefix("[") }
            return ranges.isEmpty ? nil : "\(fields[0]) \(ranges.joined(separator: ","))"
        }.sorted().joined(separator: "; ")
    }

    private static func node(port: Int, _ options: [String]) async throws -> Node {
        let folder = try TemporaryFolder.create("redis-node")
        let command =
            [
                try serverPath(), "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", folder.path, "--repl-diskless-sync-delay", "0",
            ]
            + options
        return try await node(port: port, folder: folder, command: command)
    }

    private static func node(port: Int, folder: TemporaryFolder, command: [String]) async throws -> Node {
        let cleanupToken = ExitCleanup.register(folder)
        let lifecycle = ServerLifecycle(
            name: "redis", command: command, folder: folder, cleanupToken: cleanupToken, stopSignal: SIGTERM,
            isReady: { TestRedis.answersPing(port: port) })
        try await lifecycle.start()
        return Node(port: port, lifecycle: lifecycle)
    }

    private static func serverPath() throws -> String {
        guard let path = findExecutable("redis-server") else {
            throw TestSupportError("redis-server not found in $PATH (apt-get install redis-server)")
        }
        return path
    }

    private static func cliPath() throws -> String {
        guard let path = findExecutable("redis-cli") else {
            throw TestSupportError("redis-cli not found in $PATH (apt-get install redis-tools)")
        }
        return path
    }
}
