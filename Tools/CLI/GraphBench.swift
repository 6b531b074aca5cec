import ArgumentParser
import AuthTokens
import AviaryJSON
import Foundation
import Locking
import Logging
import RPC
import ServiceKit
import Synchronization

/// `aviary bench graph`: follow throughput and follower-id page latency of a running social-graph service.
struct GraphBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "graph",
        abstract: "graph.follow with 32 clients (target ≥ 3,000 calls/s); graph.followerIds page of 1,000 (target p99 < 5 ms).",
        discussion: """
            Runs against a running social-graph service. The followers are synthetic users whose access tokens the
            bench signs with the token signing key; the users they follow must exist in auth: give their ids with
            --followees, or the bench registers them through auth.register. Every follow it made is undone at the end,
            but the graph events of those follows reach the event stream like any others and the synthetic users keep
            counts rows of zeros: run it against a test stack. The service credential and the signing key come from
            the flags, AVIARY_SERVICE_SECRET and AVIARY_TOKEN_SIGNING_KEY, or else from the database where a default
            install keeps them.
            """)

    @Option(help: "host:port of the social-graph service (default: AVIARY_SOCIAL_GRAPH_ADDRESSES or its default port).")
    var address: String?

    @Option(help: "host:port of the auth service, to register the users to follow (default: AVIARY_AUTH_ADDRESSES or its default port).")
    var authAddress: String?

    @Option(help: "Comma-separated ids of existing users to follow, instead of registering new ones.")
    var followees: String?

    @Option(help: "How many users to register and follow when --followees is not given (auth allows 5 an hour from one address by default).")
    var followeeCount = 4

    @Option(name: .customLong("service-credential"), help: "The service credential (default: AVIARY_SERVICE_SECRET).")
    var serviceCredential: String?

    @Option(name: .customLong("signing-key"), help: "Base64 of the 32-byte Ed25519 token signing seed (default: AVIARY_TOKEN_SIGNING_KEY).")
    var signingKey: String?

    @Option(help: "Where the shared secrets are when neither flag nor environment gives them (default: AVIARY_POSTGRES_URL).")
    var postgresURL: String?

    @Option(help: "Concurrent clients, one connection each.")
    var clients = 32

    @Option(help: "Seconds of following.")
    var seconds = 5

    @Option(help: "Ids per graph.followerIds page.")
    var pageSize = 1000

    @Option(help: "graph.followerIds calls to time.")
    var samples = 2000

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let configuration = try ServiceConfiguration.load(service: .socialGraph)
        let secretsURL = postgresURL ?? configuration.postgresURL
        let credential = try await BenchSecrets.credential(
            serviceCredential ?? environment["AVIARY_SERVICE_SECRET"], postgresURL: secretsURL)
        let seed = try await BenchSecrets.signingSeed(signingKey ?? environment["AVIARY_TOKEN_SIGNING_KEY"], postgresURL: secretsURL)
        let issuer = try await AccessTokenIssuer(keys: TokenKeys(signingSeed: seed), lifetime: .seconds(3600))

        var clientConfiguration = RPCClient.Configuration(addresses: [address ?? configuration.addresses(of: .socialGraph)[0]])
        clientConfiguration.connectionsPerAddress = clients
        let graph = RPCClient(configuration: clientConfiguration, logger: Logger(label: "bench"))
        let auth = RPCClient(
            configuration: .init(addresses: [authAddress ?? configuration.addresses(of: .auth)[0]]), logger: Logger(label: "bench"))
        defer {
            Task {
                await graph.shutdown()
                await auth.shutdown()
            }
        }
        let targets = try await followeeIDs(auth: auth)
        let run = FollowRun(graph: graph, issuer: issuer, followees: targets, workers: clients)

        let statements = BenchStatements()
        var before = try? await statements.total()
        let follows = try await run.follow(for: .seconds(seconds))
        print("graph.follow, \(clients) clients, \(targets.count) followees:  \(follows.summary)   (target ≥ 3,000 calls/s)")
        print(await statements.perCall(since: before, calls: follows.calls))

        try await run.topUp(followee: targets[0], toAtLeast: pageSize)
        let meta = RequestMeta(service: credential)
        let params = try RawJSON(encoding: ["userId": JSONValue.string(String(targets[0])), "limit": .int(Int64(pageSize))])
        var latencies: [Duration] = []
        before = try? await statements.total()
        let started = ContinuousClock.now
        for _ in 0..<samples {
            let began = ContinuousClock.now
            let response = try await graph.send("graph.followerIds", params: params, meta: meta)
            // The call's latency: until its response arrived, without this client's JSON decoding.
            latencies.append(ContinuousClock.now - began)
            let page = try response.decode(IDPage.self)
            guard page.items.count == pageSize else {
                throw ValidationError("graph.followerIds answered \(page.items.count) ids, expected \(pageSize)")
            }
        }
        let pages = LoadFigures(calls: samples, seconds: Self.seconds(ContinuousClock.now - started), latencies: latencies)
        print("graph.followerIds, page of \(pageSize), 1 client:  \(pages.summary)   (target p99 < 5 ms; to the response, client decoding excluded)")
        print(await statements.perCall(since: before, calls: samples))
        await statements.close()

        let unfollows = try await run.undo()
        print("graph.unfollow (clean-up), \(clients) clients:  \(unfollows.summary)")
    }

    private struct IDPage: Decodable {
        var items: [String]
    }

    /// The users to follow: given, or registered now.
    private func followeeIDs(auth: RPCClient) async throws -> [Int64] {
        if let followees {
            let ids = followees.split(separator: ",").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
            guard !ids.isEmpty else { throw ValidationError("--followees must list user ids, e.g. 123,456") }
            return ids
        }
        struct Registered: Decodable {
            struct Account: Decodable { var id: String }
            var user: Account
        }
        var ids: [Int64] = []
        for _ in 0..<max(1, followeeCount) {
            let name = "bench_" + String(UInt32.random(in: .min ... .max), radix: 16)
            let registered: Registered
            do {
                registered = try await auth.call(
                    "auth.register",
                    params: ["email": "\(name)@bench.invalid", "password": "bench-\(UUID().uuidString)", "username": name, "fullname": "Bench \(name)"],
                    as: Registered.self)
            } catch let error as RPCError where error.reason == "rate_limited" {
                throw ValidationError("auth refused to register more users (\(error.message)); pass --followees with existing ids")
            }
            guard let id = Int64(registered.user.id) else { throw ValidationError("auth.register answered a malformed id") }
            ids.append(id)
        }
        print("registered the users to follow: --followees \(ids.map(String.init).joined(separator: ",")) reuses them")
        return ids
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// Synthetic followers following the same few users: every call makes a new edge. Remembers the
/// edges so that `undo` removes them all.
private final class FollowRun: Sendable {
    private let graph: RPCClient
    private let issuer: AccessTokenIssuer
    private let followees: [Int64]
    private let workers: Int
    /// Synthetic user ids start far above any id issued in the next decades, so none is real.
    private let firstFollower = (Int64(1) << 62) + Int64.random(in: 0..<(Int64(1) << 40)) * 1024
    private let nextFollower = Ticket()
    private let edges = Locked<[(token: String, followee: Int64)]>([])

    init(graph: RPCClient, issuer: AccessTokenIssuer, followees: [Int64], workers: Int) {
        self.graph = graph
        self.issuer = issuer
        self.followees = followees
        self.workers = workers
    }

    /// Each worker takes a new follower, follows every followee with it, and again until time is up.
    func follow(for duration: Duration) async throws -> LoadFigures {
        let deadline = ContinuousClock.now.advanced(by: duration)
        return try await load { latencies in
            var calls = 0
            while ContinuousClock.now < deadline {
                let token = try await self.newFollower()
                for followee in self.followees {
                    let began = ContinuousClock.now
                    try await self.call("graph.follow", followee: followee, token: token)
                    latencies.append(ContinuousClock.now - began)
                    calls += 1
                }
            }
            return calls
        }
    }

    /// Adds followers of `followee` until it has at least `count` from this run.
    func topUp(followee: Int64, toAtLeast count: Int) async throws {
        let have = edges.withLock { $0.count { $0.followee == followee } }
        let missing = max(0, count - have)
        let started = Ticket()
        _ = try await load { _ in
            while started.take() < missing {
                try await self.call("graph.follow", followee: followee, token: try await self.newFollower())
            }
            return 0
        }
    }

    /// Unfollows every edge the run made.
    func undo() async throws -> LoadFigures {
        let all = edges.withLock { $0 }
        let next = Ticket()
        return try await load { latencies in
            var calls = 0
            while true {
                let index = next.take()
                guard index < all.count else { break }
                let began = ContinuousClock.now
                try await self.send("graph.unfollow", followee: all[index].followee, token: all[index].token)
                latencies.append(ContinuousClock.now - began)
                calls += 1
            }
            return calls
        }
    }

    private func newFollower() async throws -> String {
        let id = firstFollower + Int64(nextFollower.take())
        return try await issuer.issue(userID: id, sessionID: id).token
    }

    private func call(_ method: String, followee: Int64, token: String) async throws {
        try await send(method, followee: followee, token: token)
        edges.withLock { $0.append((token, followee)) }
    }

    /// The answer is checked to be a result, not decoded: this process shares the two cores with the
    /// services, and decoding each answer into a tree cost it a third of its time.
    private func send(_ method: String, followee: Int64, token: String) async throws {
        let params = RawJSON(unchecked: Array(#"{"userId":"\#(followee)"}"#.utf8))
        _ = try await graph.send(method, params: params, meta: RequestMeta(token: token)).result()
    }

    /// Runs `body` on every worker at once; each returns its call count and fills its latencies.
    private func load(_ body: @escaping @Sendable (inout [Duration]) async throws -> Int) async throws -> LoadFigures {
        let started = ContinuousClock.now
        let (calls, latencies) = try await withThrowingTaskGroup(of: (Int, [Duration]).self) { group in
            for _ in 0..<workers {
                group.addTask(executorPreference: loadWorkerExecutor()) {
                    var latencies: [Duration] = []
                    let calls = try await body(&latencies)
                    return (calls, latencies)
                }
            }
            var total = 0
            var all: [Duration] = []
            for try await (calls, latencies) in group {
                total += calls
                all += latencies
            }
            return (total, all)
        }
        return LoadFigures(calls: calls, seconds: GraphBench.seconds(ContinuousClock.now - started), latencies: latencies)
    }
}

/// Hands out 0, 1, 2, … to concurrent workers.
private final class Ticket: Sendable {
    private let next = Atomic<Int>(0)

    func take() -> Int {
        next.add(1, ordering: .relaxed).oldValue
    }
}
