import ArgumentParser
import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Logging
import RPC
import ServiceKit
import Synchronization

/// `aviary bench blocks`: what blocks and mutes cost a home timeline read. Two readers follow the
/// same authors and so have the same home timeline; one of them blocked `--blocks` other users and
/// muted `--mutes` more. Their reads are measured in turns, in the same run.
struct BlocksBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blocks",
        abstract: """
            timeline.home of 20 for a reader with 1,000 blocks and 1,000 mutes against one with none, in turns \
            (target: within 10%).
            """,
        discussion: """
            Runs against running auth, social-graph, tweets and timeline services (addresses from \
            AVIARY_*_ADDRESSES or the defaults). It registers 2 readers, the authors and the users blocked and \
            muted through auth.register (raise AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR and hash at a test cost, \
            AVIARY_AUTH_ARGON2_MEMORY_KIB=256 AVIARY_AUTH_ARGON2_ITERATIONS=1). The accounts stay: use a \
            throw-away stack. Every answer is checked: 20 tweets, none by a blocked or muted user.
            """)

    @Option(help: "Authors both readers follow.")
    var authors = 100

    @Option(help: "Tweets each author posts.")
    var tweetsPerAuthor = 3

    @Option(help: "Users the second reader blocks.")
    var blocks = 1000

    @Option(help: "Users the second reader mutes (besides those blocked).")
    var mutes = 1000

    @Option(help: "Concurrent clients of the closed-loop runs.")
    var clients = 32

    @Option(help: "Reads a second of the paced runs.")
    var rate = 1000

    @Option(help: "Seconds of each run.")
    var seconds = 5

    @Option(help: "Rounds: each runs both readers, closed loop and paced, one after the other.")
    var rounds = 3

    func run() async throws {
        try validateRate(rate, option: "--rate")
        let configuration = try ServiceConfiguration.load(service: .timeline)
        func client(_ service: ServiceName, connections: Int = 4) -> RPCClient {
            var settings = RPCClient.Configuration(addresses: configuration.addresses(of: service))
            settings.connectionsPerAddress = connections
            return RPCClient(configuration: settings, logger: Logger(label: "bench"))
        }
        let (auth, graph, tweets, timeline) = (client(.auth), client(.socialGraph), client(.tweets), client(.timeline, connections: clients))
        defer {
            Task {
                for client in [auth, graph, tweets, timeline] { await client.shutdown() }
            }
        }

        let start = ContinuousClock.now
        let users = try await register(2 + authors + blocks + mutes, auth: auth)
        let (plain, guarded) = (users[0], users[1])
        let authorAccounts = Array(users[2..<2 + authors])
        let blocked = Array(users[(2 + authors)..<(2 + authors + blocks)])
        let muted = Array(users[(2 + authors + blocks)...])
        try await inParallel(authorAccounts, width: 16) { author in
            for reader in [plain, guarded] {
                _ = try await graph.call("graph.follow", params: ["userId": author.user.id], meta: RequestMeta(token: reader.accessToken), as: JSONValue.self)
            }
            for number in 0..<tweetsPerAuthor {
                _ = try await tweets.call(
                    "tweets.create", params: ["text": "blocks bench \(number)"], meta: RequestMeta(token: author.accessToken),
                    as: JSONValue.self)
            }
        }
        let guardedMeta = RequestMeta(token: guarded.accessToken)
        try await inParallel(blocked, width: 16) { user in
            _ = try await graph.call("graph.block", params: ["userId": user.user.id], meta: guardedMeta, as: JSONValue.self)
        }
        try await inParallel(muted, width: 16) { user in
            _ = try await graph.call("graph.mute", params: ["userId": user.user.id], meta: guardedMeta, as: JSONValue.self)
        }
        let hidden = Set((blocked + muted).map(\.user.id))
        // The same timeline for both, each read checked.
        @Sendable func read(_ reader: Registered) async throws {
            let page = try await timeline.call(
                "timeline.home", params: ["limit": 20], meta: RequestMeta(token: reader.accessToken), as: Page<Tweet>.self)
            guard page.items.count == 20, !page.items.contains(where: { hidden.contains($0.author.id.description) }) else {
                throw BenchBadReply(text: "\(page.items.count) tweets")
            }
        }
        for reader in [plain, guarded] {
            let deadline = ContinuousClock.now + .seconds(60)
            while (try? await read(reader)) == nil {
                guard ContinuousClock.now < deadline else { throw ValidationError("the home timelines were not full within 60 s") }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        print(
            "set-up: \(users.count) accounts, \(authors) authors × \(tweetsPerAuthor) tweets, \(blocks) blocks and \(mutes) mutes "
                + "in \(ContinuousClock.now - start); caches warm (a first read of each home before the runs)")

        var ratios: (rate: [Double], p99: [Double]) = ([], [])
        for round in 1...rounds {
            var closed: [LoadFigures] = []
            var paced: [BenchOutcome] = []
            for reader in [plain, guarded] {
                let failed = Atomic<Int>(0)
                closed.append(
                    try await runLoad(workers: clients, duration: .seconds(seconds)) { _ in
                        do { try await read(reader) } catch { failed.add(1, ordering: .relaxed) }
                    })
                let failures = failed.load(ordering: .relaxed)
                if failures > 0 { print("  \(failures) closed-loop reads failed or were wrong") }
                let figures = try await runAtRate(rate, for: .seconds(seconds)) { _ in try await read(reader) }
                paced.append(BenchOutcome(figures: figures, expected: rate * seconds, cpuSeconds: 0))
            }
            for (name, index) in [("none", 0), ("\(blocks) blocks + \(mutes) mutes", 1)] {
                print(
                    "round \(round), \(name): \(clients) clients \(closed[index].summary);  at \(rate)/s \(paced[index].summary)")
            }
            ratios.rate.append(closed[1].rate / closed[0].rate)
            ratios.p99.append(paced[1].p99 / max(paced[0].p99, 0.001))
        }
        print(
            String(
                format: "blocked/plain, median of %d rounds: throughput %.3f, paced p99 %.3f   (target: within 10%%)",
                rounds, median(ratios.rate), median(ratios.p99)))
    }

    private struct Registered: Decodable, Sendable {
        struct Account: Decodable, Sendable { var id: String }
        var user: Account
        var accessToken: String
    }

    /// `count` new accounts, registered 16 at a time.
    private func register(_ count: Int, auth: RPCClient) async throws -> [Registered] {
        let made = Locked<[Int: Registered]>([:])
        try await inParallel(Array(0..<count), width: 16) { index in
            let name = "bb_" + String(UInt64.random(in: .min ... .max), radix: 36).prefix(12)
            do {
                let account = try await auth.call(
                    "auth.register",
                    params: [
                        "email": "\(name)@bench.invalid", "password": "bench-password-\(index)", "username": String(name),
                        "fullname": "Bench",
                    ], as: Registered.self)
                made.withLock { $0[index] = account }
            } catch let error as RPCError where error.reason == "rate_limited" {
                throw ValidationError("auth refused to register more accounts (\(error.message)); raise its limit")
            }
        }
        return made.withLock { made in (0..<count).compactMap { made[$0] } }
    }

    /// Runs `body` for each of `items`, `width` at a time.
    private func inParallel<Item: Sendable>(
        _ items: [Item], width: Int, _ body: @escaping @Sendable (Item) async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, item) in items.enumerated() {
                if index >= width { try await group.next() }
                group.addTask { try await body(item) }
            }
            try await group.waitForAll()
        }
    }
}
