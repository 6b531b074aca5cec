import ArgumentParser
import AuthTokens
import AviaryJSON
import Foundation
import Locking
import Logging
import RPC
import ServiceKit

/// `aviary bench notifications`: idle subscriptions held by one instance, and list latency under a steady rate.
struct NotificationsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "10,000 idle subscriptions on one notifications instance (target RSS < 300 MiB, a notification still within 100 ms); notifications.list page of 20 at 1,000 calls/s (target p99 < 10 ms).",
        discussion: """
            Runs against running auth, social-graph, tweets and notifications services (a test stack: it registers
            users through auth.register, so raise AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR). The idle subscribers are
            synthetic users whose tokens the bench signs with the signing key (--signing-key, AVIARY_TOKEN_SIGNING_KEY, or
            else the database where a default install keeps it),
            --per-connection of them on each connection. A real recipient subscribes among them; real users follow it
            and like its tweet one at a time, and the bench times each from the call to the push (the whole path:
            outbox, stream, consumer, storage, hydration, pub/sub). The memory figure is the service's resident set,
            read from /proc (--pid, or the only aviary-notifications process of this machine).
            """)

    @Option(help: "host:port of the notifications instance (default: AVIARY_NOTIFICATIONS_ADDRESSES or its default port).")
    var address: String?

    @Option(help: "host:port of the auth service (default: AVIARY_AUTH_ADDRESSES or its default port).")
    var authAddress: String?

    @Option(help: "host:port of the social-graph service (default: AVIARY_SOCIAL_GRAPH_ADDRESSES or its default port).")
    var graphAddress: String?

    @Option(help: "host:port of the tweets service (default: AVIARY_TWEETS_ADDRESSES or its default port).")
    var tweetsAddress: String?

    @Option(name: .customLong("signing-key"), help: "Base64 of the 32-byte Ed25519 token signing seed (default: AVIARY_TOKEN_SIGNING_KEY).")
    var signingKey: String?

    @Option(help: "Idle subscriptions to open.")
    var subscriptions = 10_000

    @Option(help: "Idle subscriptions per connection (1 = a connection each).")
    var perConnection = 1

    @Option(help: "Notifications to time while the idle subscriptions are open: follows and likes in turn, each by an actor of its own.")
    var samples = 200

    @Option(help: "notifications.list calls per second.")
    var rate = 1_000

    @Option(help: "Seconds of notifications.list calls (at most 15).")
    var seconds = 8

    @Option(help: "The process id of the notifications instance, for its memory.")
    var pid: Int32?

    @Option(help: "Message events written at once to measure the notifications' event throughput (0 skips it).")
    var events = 20_000

    func validate() throws {
        try validateRate(rate, option: "--rate")
        guard (2...2_000).contains(samples) else { throw ValidationError("--samples is 2 to 2,000") }
    }

    func run() async throws {
        let configuration = try ServiceConfiguration.load(service: .notifications)
        if events > 0 { try await Self.measureEventThroughput(count: events, configuration: configuration) }
        let logger = Logger(label: "bench")
        let seed = try await BenchSecrets.signingSeed(
            signingKey ?? ProcessInfo.processInfo.environment["AVIARY_TOKEN_SIGNING_KEY"], postgresURL: configuration.postgresURL)
        let issuer = try await AccessTokenIssuer(keys: TokenKeys(signingSeed: seed), lifetime: .seconds(3600))
        let address = self.address ?? configuration.addresses(of: .notifications)[0]
        let (host, port) = try Self.split(address)
        func client(_ address: String, connections: Int = 2) -> RPCClient {
            var settings = RPCClient.Configuration(addresses: [address])
            settings.connectionsPerAddress = connections
            return RPCClient(configuration: settings, logger: logger)
        }
        let auth = client(authAddress ?? configuration.addresses(of: .auth)[0])
        let graph = client(graphAddress ?? configuration.addresses(of: .socialGraph)[0])
        let tweets = client(tweetsAddress ?? configuration.addresses(of: .tweets)[0])
        let notifications = client(address, connections: 16)
        let pid = try self.pid ?? BenchProcesses.pid(of: "aviary-notifications")

        // The recipient and the real actors: each follows it once and likes its tweet once.
        let users = try await Self.register(1 + (samples + 1) / 2, auth: auth)
        let (recipient, actors) = (users[0], Array(users[1...]))
        let tweet = try await tweets.call(
            "tweets.create", params: ["text": "bench tweet"], meta: RequestMeta(token: recipient.token), as: IDOnly.self
        ).id

        let before = BenchProcesses.residentMiB(pid)
        let idle = try await IdleSubscribers.open(
            count: subscriptions, perConnection: max(1, perConnection), host: host, port: port, issuer: issuer)
        let after = BenchProcesses.residentMiB(pid)
        print(String(
            format: "%d idle subscriptions on %d connections: service RSS %.1f MiB before, %.1f MiB after (%.1f KiB each)   (target < 300 MiB)",
            idle.count, idle.connections.count, before, after, (after - before) * 1024 / Double(max(1, idle.count))))

        // Live latency to one subscriber among them, on a connection of its own: follows and likes
        // in turn, each push matched to its action by type, actor and tweet.
        let live = try await RPCClientConnection.connect(host: host, port: port)
        _ = try await live.call("notifications.subscribe", meta: RequestMeta(token: recipient.token), as: JSONValue.self)
        let pushes = PushLog(live.notifications)
        var latencies: [Duration] = []
        var failed = 0
        for index in 0..<samples {
            let actor = actors[index / 2]
            let follow = index.isMultiple(of: 2)
            let began = ContinuousClock.now
            do {
                if follow {
                    _ = try await graph.call(
                        "graph.follow", params: ["userId": recipient.id], meta: RequestMeta(token: actor.token), as: JSONValue.self)
                } else {
                    _ = try await tweets.call(
                        "tweets.like", params: ["tweetId": tweet], meta: RequestMeta(token: actor.token), as: JSONValue.self)
                }
            } catch {
                failed += 1
                continue
            }
            let expected = PushLog.Push(type: follow ? "follow" : "like", actor: actor.id, tweet: follow ? nil : tweet)
            if let arrived = await pushes.arrival(of: expected, timeout: BenchSocket.callTimeout) {
                latencies.append(arrived - began)
            } else {
                failed += 1
            }
        }
        let delivery = BenchOutcome(
            figures: LoadFigures(calls: latencies.count, seconds: 1, latencies: latencies), expected: samples, cpuSeconds: 0)
        print(
            "a notification to 1 of \(idle.count + 1) subscribers, from the follow or like call to its push: \(samples) samples"
                + " (half follows, half likes, each push matched to its action; a failed call or a push not seen in 10 s"
                + " counts as 10 s)\n  \(delivery.summary)   (target < 100 ms)")
        pushes.stop()
        await live.close()
        await idle.close()

        // The recipient now has a page of 20 hydrated notifications (follows, and likes of its tweet).
        // Paced like `timeline.home`: each latency runs from the moment its call was due. The answer
        // is checked to be a result, not decoded: this process shares the two cores with the services.
        let listPage: @Sendable (Int) async throws -> Void = { _ in
            _ = try await notifications.send(
                "notifications.list", params: RawJSON(unchecked: Array(#"{"limit":20}"#.utf8)), meta: RequestMeta(token: recipient.token)
            ).result()
        }
        // Two seconds at the same pace first, not recorded: the service is still closing the idle
        // connections just dropped, which is the subscription figures' business, not this one's.
        _ = try await runAtRate(rate, for: .seconds(2), listPage)
        let statements = BenchStatements()
        let statementsBefore = try? await statements.total()
        let list = try await runAtRate(rate, for: .seconds(min(seconds, 15)), listPage)
        print("notifications.list, page of 20 hydrated, paced at \(rate) calls/s after 2 s unrecorded:  \(list.summary)   (target p99 < 10 ms)")
        print(await statements.perCall(since: statementsBefore, calls: list.calls))
        await statements.close()
        for client in [auth, graph, tweets, notifications] { await client.shutdown() }
    }

    private struct IDOnly: Decodable {
        var id: String
    }

    struct BenchUser: Sendable {
        var id: String
        var token: String
    }

    private static func register(_ count: Int, auth: RPCClient) async throws -> [BenchUser] {
        struct Registered: Decodable {
            struct Account: Decodable { var id: String }
            var user: Account
            var accessToken: String
        }
        var users: [BenchUser] = []
        for _ in 0..<count {
            let name = "nb_" + String(UInt64.random(in: .min ... .max), radix: 36).prefix(11)
            do {
                let registered = try await auth.call(
                    "auth.register",
                    params: ["email": "\(name)@bench.invalid", "password": "bench-\(UUID().uuidString)", "username": String(name), "fullname": "Bench \(name)"],
                    as: Registered.self)
                users.append(BenchUser(id: registered.user.id, token: registered.accessToken))
            } catch let error as RPCError where error.reason == "rate_limited" {
                throw ValidationError("auth refused to register more users (\(error.message)); raise AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR")
            }
        }
        return users
    }

    private static func split(_ address: String) throws -> (String, Int) {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
            throw ValidationError("an address is host:port, got \(address)")
        }
        return (String(address[..<colon]), port)
    }
}

/// The notifications pushed on one connection, each kept with when it arrived, so that an action
/// is timed to its own push, whatever else arrives.
private final class PushLog: Sendable {
    struct Push: Equatable, Sendable {
        var type: String
        var actor: String
        var tweet: String?
    }

    private let arrivals = Locked<[(push: Push, at: ContinuousClock.Instant)]>([])
    private let reader = Locked<Task<Void, Never>?>(nil)

    init(_ stream: AsyncStream<RPCNotification>) {
        let task = Task { [self] in
            for await message in stream {
                let at = ContinuousClock.now
                guard let event = try? message.params.decode(JSONValue.self)["event"], event["type"] == "notification",
                    let item = event["notification"], let type = item["type"]?.stringValue,
                    let actor = item["actor"]?["id"]?.stringValue
                else { continue }
                arrivals.withLock { $0.append((Push(type: type, actor: actor, tweet: item["tweet"]?["id"]?.stringValue), at)) }
            }
        }
        reader.withLock { $0 = task }
    }

    /// When `push` arrived, waiting up to `timeout` for it; nil if it never did.
    func arrival(of push: Push, timeout: Duration) async -> ContinuousClock.Instant? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = arrivals.withLock({ $0.first { $0.push == push }?.at }) { return found }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return nil
    }

    func stop() {
        reader.withLock { $0?.cancel() }
    }
}

/// Subscriptions of synthetic users that never get a notification: what an idle client costs.
private struct IdleSubscribers: Sendable {
    var connections: [RPCClientConnection]
    var count: Int

    static func open(count: Int, perConnection: Int, host: String, port: Int, issuer: AccessTokenIssuer) async throws -> IdleSubscribers {
        let connectionCount = (count + perConnection - 1) / perConnection
        let base = Int64.random(in: 1 << 40 ... 1 << 50)
        let connections = try await withThrowingTaskGroup(of: RPCClientConnection.self) { group in
            var opened: [RPCClientConnection] = []
            var next = 0
            func add() {
                let index = next
                next += 1
                group.addTask {
                    let connection = try await RPCClientConnection.connect(host: host, port: port)
                    for slot in 0..<perConnection where index * perConnection + slot < count {
                        let user = base + Int64(index * perConnection + slot)
                        let token = try await issuer.issue(userID: user, sessionID: user).token
                        _ = try await connection.call("notifications.subscribe", meta: RequestMeta(token: token), as: JSONValue.self)
                    }
                    return connection
                }
            }
            while next < min(connectionCount, 16) { add() }
            for try await connection in group {
                opened.append(connection)
                if next < connectionCount { add() }
            }
            return opened
        }
        return IdleSubscribers(connections: connections, count: count)
    }

    func close() async {
        for connection in connections { await connection.close() }
    }
}
