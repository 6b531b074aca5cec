import ArgumentParser
import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Logging
import NIOCore
import NIOHTTP1
import RPC
import Redis
import ServiceKit
import TimelineService

/// `aviary bench timeline`: home timeline reads, fan-out latency and the DeathStarBench mix on Reed98.
struct TimelineBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timeline",
        abstract: """
            timeline.home of 20 (target ≥ 5,000 reads/s, p99 < 10 ms at 2,000/s); fan-out to 1,000 followers after the \
            create ack (target < 50 ms); the DeathStarBench mix on Reed98 (target 4,000 requests/s with p99 < 50 ms).
            """,
        discussion: """
            Runs against running auth, social-graph, tweets and timeline services (addresses from AVIARY_*_ADDRESSES or \
            the defaults) and the timelines' Redis (AVIARY_REDIS_URL), which it reads to see fan-out land. It registers \
            the 962 Reed98 users plus 38 more through auth.register, so auth must allow that many registrations from one \
            address (AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR) and should hash at a test cost \
            (AVIARY_AUTH_ARGON2_MEMORY_KIB=256, AVIARY_AUTH_ARGON2_ITERATIONS=1) or set-up takes minutes; then it \
            follows every Reed98 friendship both ways and posts a few tweets per user. Use a throw-away stack.
            """)

    @Option(help: "The Reed98 edge list (run from the repository's root, or give its path).")
    var graph = "Tests/Fixtures/socfb-Reed98/socfb-Reed98.edges"

    @Option(help: "Tweets each Reed98 user posts before the runs; without it each posts 0 to 20 (uniformly), as DeathStarBench's set-up does.")
    var tweetsPerUser: Int?

    @Option(help: "The mix's calls: deathstarbench (reads at a random depth of 0 to 100 entries, following cursors; posts of 280 characters with 1 to 6 mentions, 1 to 6 links and 0 to 4 uploaded images) or pages (the first 10 entries; short posts).")
    var mix = MixShape.deathstarbench

    @Option(help: "Seconds per measured closed-loop and paced run.")
    var seconds = 5

    @Option(help: "Seconds of each run of the mix at a rate (DeathStarBench's steps are 30 s).")
    var mixSeconds = 30

    @Option(help: "Concurrent clients of the closed-loop runs.")
    var clients = 64

    @Option(help: "Comma-separated request rates of the mix, tried in order until p99 passes 50 ms.")
    var mixRates = "1000,2000,3000,3500,4000,4500,5000,6000"

    @Option(help: "Comma-separated weights of home reads, user reads and creates in the mix; 0,0,1 runs creates alone.")
    var mixWeights = "6,3,1"

    @Option(help: "Runs of the mix at each rate, reported each and as the median and range of their p99.")
    var repetitions = 3

    @Option(help: "Comma-separated rates of the mix run for 20 s right after FLUSHALL, each after its own flush (cold caches); empty skips them.")
    var flushRates = "1000,2000"

    /// The mix's weights (home, user, create), empty when `--mix-weights` is not three whole numbers
    /// of at least 0 with a positive sum.
    private var parsedWeights: [Int] {
        let weights = mixWeights.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard weights.count == 3, weights.allSatisfy({ $0 >= 0 }), weights.reduce(0, +) > 0 else { return [] }
        return weights
    }

    /// The mix's rates in the order given; nil when one is not a whole number.
    private var parsedRates: [Int]? { Self.rates(mixRates) }

    /// Comma-separated whole numbers in the order given; nil when one is not.
    private static func rates(_ text: String) -> [Int]? {
        let rates = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        return rates.contains(nil) ? nil : rates.compactMap { $0 }
    }

    func validate() throws {
        guard !parsedWeights.isEmpty else {
            throw ValidationError("--mix-weights takes three whole numbers of at least 0, not all 0 (home,user,create)")
        }
        guard let rates = parsedRates, !rates.isEmpty else {
            throw ValidationError("--mix-rates takes whole numbers separated by commas, not '\(mixRates)'")
        }
        for rate in rates { try validateRate(rate, option: "--mix-rates") }
        guard let flushed = Self.rates(flushRates) else {
            throw ValidationError("--flush-rates takes whole numbers separated by commas, not '\(flushRates)'")
        }
        for rate in flushed { try validateRate(rate, option: "--flush-rates") }
        guard (1...10).contains(repetitions) else { throw ValidationError("--repetitions must be 1 to 10, not \(repetitions)") }
        guard (1...600).contains(mixSeconds) else { throw ValidationError("--mix-seconds must be 1 to 600, not \(mixSeconds)") }
        guard (1...600).contains(seconds) else { throw ValidationError("--seconds must be 1 to 600, not \(seconds)") }
    }

    func run() async throws {
        let configuration = try ServiceConfiguration.load(service: .timeline)
        let services = try BenchServices(configuration: configuration, connections: clients)
        let edges = try Self.loadEdges(graph)
        let nodeCount = (edges.map { max($0.0, $0.1) }.max() ?? -1) + 1

        var clock = ContinuousClock.now
        let users = try await services.register(nodeCount + 39)
        let reed = Array(users.prefix(nodeCount))
        let author = users[nodeCount]
        let fans = Array(users.dropFirst(nodeCount + 1)) + reed
        print("set-up: registered \(users.count) users in \(Self.format(ContinuousClock.now - clock))")

        clock = .now
        let follows = edges.flatMap { [(reed[$0.0], reed[$0.1]), (reed[$0.1], reed[$0.0])] } + fans.map { ($0, author) }
        let followRun = try await services.closedLoop(follows.count, workers: 32) { index in
            try await services.follow(follows[index].0, follows[index].1)
        }
        print("set-up: \(follows.count) graph.follow in \(Self.format(ContinuousClock.now - clock)) (\(followRun.summary))")

        let shape = self.mix
        // DeathStarBench's posts carry 0 to 4 media: each user's are picked from four images of
        // theirs, uploaded here.
        clock = .now
        let uploads = Locked([[String]](repeating: [], count: nodeCount))
        if shape == .deathstarbench {
            let run = try await services.closedLoop(nodeCount, workers: 32) { index in
                let ids = try await services.uploadImages(4, as: reed[index])
                uploads.withLock { $0[index] = ids }
            }
            print("set-up: 4 images of 4 KiB uploaded by each of \(nodeCount) users in \(Self.format(ContinuousClock.now - clock)) (\(run.summary), 3 calls an upload)")
        }
        let media = uploads.withLock { $0 }
        let posts = reed.indices.flatMap { index in Array(repeating: index, count: tweetsPerUser ?? BenchRandom.pick(0...20)) }.shuffled()
        let creates = try await services.closedLoop(posts.count, workers: 32) { index in
            let author = posts[index]
            try await services.post(as: reed[author], shape.text(index, mentioning: reed), mediaIds: shape.media(of: media[author]))
        }
        print("tweets.create, 32 clients: \(creates.summary)   (target ≥ 1,500/s)")

        clock = .now
        let statements = BenchStatements()
        let buildsWanted = try await Self.buildFigures(statements).count + Double(2 * users.count)
        // Both kinds of timeline are built before anything is measured, as a running network has
        // them: the mix's first rate would otherwise also time a build for most user timelines.
        _ = try await services.closedLoop(users.count, workers: 16) { index in
            try await services.home(of: users[index], limit: 20)
            try await services.userTimeline(of: users[index], as: users[(index + 1) % users.count], limit: 10)
        }
        // A read of a missing set answers from the services and builds the set in the background:
        // wait for the two builds per user, home and user timeline.
        while try await Self.buildFigures(statements).count < buildsWanted {
            guard ContinuousClock.now - clock < .seconds(300) else {
                throw ValidationError("the timeline sets of \(users.count) users were not built within 300 s")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        print("set-up: first home and user timeline reads and their builds, \(users.count) users, in \(Self.format(ContinuousClock.now - clock))")

        let duration = Duration.seconds(seconds)
        let reads = try await runLoad(workers: clients, duration: duration) { worker in
            try await services.home(of: reed[BenchRandom.pick(0..<nodeCount)], limit: 20)
        }
        print("timeline.home of 20, \(clients) clients: \(reads.summary)   (target ≥ 5,000 reads/s)")
        let paced = try await runAtRate(2000, for: duration) { _ in
            try await services.home(of: reed[BenchRandom.pick(0..<nodeCount)], limit: 20)
        }
        print("timeline.home of 20 at 2,000/s: \(paced.summary)   (target p99 < 10 ms)")

        let fanOut = try await services.fanOutLatencies(of: author, to: fans, samples: 30)
        print("fan-out to \(fans.count) followers after the create ack, 30 tweets: \(fanOut.summary)   (target < 50 ms)")

        let weights = parsedWeights
        let total = weights.reduce(0, +)
        let shares = MixCall.allCases.map { "\(weights[$0.rawValue] * 100 / total)% \($0)" }.joined(separator: ", ") + ", \(self.mix)"
        // Each Reed98 user's friends (they follow each other), for read-your-writes samples.
        var friends = [[Int]](repeating: [], count: nodeCount)
        for (a, b) in edges where a != b {
            friends[a].append(b)
            friends[b].append(a)
        }
        let friendsOf = friends
        /// The mix at `rate` for `duration`, Poisson arrivals: its figures (a failed call, or a reply
        /// that fails its check, counts as an error and as a 10 s answer), each kind's from its own
        /// start, and read-your-writes: for one create in ten, how long after its acknowledgement a
        /// friend's home timeline (read through the service, ``BenchVisibility``) shows it.
        @Sendable func mix(at rate: Int, for duration: Duration) async throws -> (outcome: BenchOutcome, byKind: String, visible: String) {
            let byKind = Locked<[[Duration]]>(MixCall.allCases.map { _ in [] })
            let visibility = BenchVisibility()
            let figures = try await runAtRate(rate, for: duration, arrivals: .poisson) { call in
                let index = BenchRandom.pick(0..<nodeCount)
                let user = reed[index]
                let kind = MixCall.pick(BenchRandom.pick(0..<total), weights: weights)
                let began = ContinuousClock.now
                switch kind {
                case .home: try await services.read(.home, of: user, as: user, entries: shape.entriesRead())
                case .user: try await services.read(.user, of: reed[BenchRandom.pick(0..<nodeCount)], as: user, entries: shape.entriesRead())
                case .create:
                    let id = try await services.post(
                        as: user, shape.text(BenchRandom.pick(0..<1_000_000), mentioning: reed), mediaIds: shape.media(of: media[index]))
                    if call % 10 == 0, !friendsOf[index].isEmpty {
                        let friend = reed[friendsOf[index][BenchRandom.pick(0..<friendsOf[index].count)]]
                        visibility.watch(id, on: friend, from: ContinuousClock.now, services: services)
                    }
                }
                let took = ContinuousClock.now - began
                byKind.withLock { $0[kind.rawValue].append(took) }
            }
            let visible = await visibility.figures()
            let expected = rate * Int(duration.components.seconds)
            let parts = zip(MixCall.allCases, byKind.withLock { $0 }).filter { !$0.1.isEmpty }.map { kind, latencies in
                "\(kind) " + LoadFigures(calls: latencies.count, seconds: figures.seconds, latencies: latencies).summary
            }
            return (BenchOutcome(figures: figures, expected: expected, cpuSeconds: 0), parts.joined(separator: ";  "), visible)
        }
        @Sendable func statementsSent() async throws -> Double { try await statements.total() }
        var best: Int?
        var failedStep = false
        for rate in parsedRates ?? [] {
            var outcomes: [BenchOutcome] = []
            for run in 1...repetitions {
                let statements = try await statementsSent()
                let (outcome, byKind, visible) = try await mix(at: rate, for: .seconds(mixSeconds))
                let perCall = (try await statementsSent() - statements) / Double(rate * mixSeconds)
                print("DeathStarBench mix (\(shares)) at \(rate)/s, run \(run) of \(repetitions): \(outcome.summary)")
                // Which kind of call makes the tail: each one's time from its start (not from when it
                // was due, as the figures above).
                print("  by kind, from each call's start: " + byKind)
                print("  read-your-writes, a friend's home timeline shows the post after its ack: " + visible)
                print(String(format: "  Postgres statements per call, every service's, background work included: %.2f", perCall))
                outcomes.append(outcome)
            }
            let p99s = outcomes.map(\.p99).sorted()
            let errors = outcomes.map(\.failed).reduce(0, +)
            print(String(
                format: "  at %d/s over %d runs: p99 median %.2f ms (%.2f–%.2f), errors %d", rate, repetitions, p99s[p99s.count / 2],
                p99s[0], p99s[p99s.count - 1], errors))
            guard p99s[p99s.count / 2] < 50, errors == 0 else {
                failedStep = true
                break
            }
            best = rate
        }
        let ceiling = best.map { failedStep ? "\($0)/s" : "≥ \($0)/s (no rate tried failed)" } ?? "none"
        print("DeathStarBench mix: highest rate with median p99 < 50 ms and no errors: \(ceiling)   (target 4,000/s)")

        // What the warm caches cost, before the flushes below empty them.
        try await RedisMemory(redis: services.redis, sample: 200, capacity: 800).report()

        // What one cold home timeline costs, nothing else running: 200 sets dropped, each read once
        // (its page from the services) and rebuilt in the background.
        let cold = Array(reed.prefix(200))
        _ = try await services.redis.send(["DEL"] + cold.map { RedisArgument("aviary:timeline:home:\($0.id)") })
        let beforeCold = try await Self.buildFigures(statements)
        let statementsBeforeCold = try await statementsSent()
        let coldReads = try await services.closedLoop(cold.count, workers: 1) { index in
            try await services.home(of: cold[index], limit: 20)
        }
        var afterCold = try await Self.buildFigures(statements)
        let coldDeadline = ContinuousClock.now + .seconds(60)
        while afterCold.count < beforeCold.count + Double(cold.count) {
            guard ContinuousClock.now < coldDeadline else { throw ValidationError("200 cold home timelines were not rebuilt within 60 s") }
            try await Task.sleep(for: .milliseconds(50))
            afterCold = try await Self.buildFigures(statements)
        }
        print("cold home timelines (200, bodies and summaries warm), read one at a time: \(coldReads.summary)")
        print("  " + afterCold.since(beforeCold))
        print(String(
            format: "  Postgres statements per read and its rebuild, every service's: %.2f",
            (try await statementsSent() - statementsBeforeCold) / Double(cold.count)))

        // Cold caches: every timeline set, tweet body and user summary in Redis gone at once.
        for rate in Self.rates(flushRates) ?? [] {
            _ = try await services.redis.send(["FLUSHALL"])
            let before = try await Self.buildFigures(statements)
            let sentBefore = try await statementsSent()
            let (outcome, byKind, visible) = try await mix(at: rate, for: .seconds(20))
            let perCall = (try await statementsSent() - sentBefore) / Double(rate * 20)
            let after = try await Self.buildFigures(statements)
            print("the mix at \(rate)/s for the first 20 s after FLUSHALL: \(outcome.summary)   (target p99 < 50 ms, no errors)")
            print("  by kind, from each call's start: " + byKind)
            print("  read-your-writes: " + visible)
            print("  " + after.since(before))
            print(String(format: "  Postgres statements per call, every service's, background work included: %.2f", perCall))
        }
        await statements.close()
        await services.shutdown()
    }

    /// The timeline service's builds so far, from its `/metrics`: how many, their total time, and
    /// its histogram (cumulative counts by upper bound in seconds).
    private struct BuildFigures {
        var count = 0.0
        var seconds = 0.0
        var buckets: [(bound: Double, count: Double)] = []

        /// The builds since `earlier`: their count, mean, and the bucket bounds their p50 and p99 fall under.
        func since(_ earlier: BuildFigures) -> String {
            let built = count - earlier.count
            guard built > 0 else { return "no timeline sets built" }
            func quantile(_ q: Double) -> String {
                for (bucket, old) in zip(buckets, earlier.buckets) where bucket.count - old.count >= q * built {
                    return bucket.bound.isFinite ? String(format: "≤ %g ms", bucket.bound * 1000) : "> 5 s"
                }
                return "?"
            }
            return String(
                format: "timeline sets built: %.0f, mean %.1f ms, p50 %@, p99 %@", built, (seconds - earlier.seconds) * 1000 / built,
                quantile(0.5), quantile(0.99))
        }
    }

    /// The timeline builds of every timeline instance (the other services have none).
    private static func buildFigures(_ admins: BenchStatements) async throws -> BuildFigures {
        let prefix = "aviary_timeline_build_seconds_bucket{le=\""
        var figures = BuildFigures()
        var buckets: [Double: Double] = [:]
        for reply in try await admins.metrics() {
            for line in String(buffer: reply.body).split(separator: "\n") where line.hasPrefix(prefix) {
                let fields = line.dropFirst(prefix.count).split(separator: "\"")
                guard fields.count == 2, let count = Double(fields[1].split(separator: " ").last ?? "") else { continue }
                buckets[fields[0] == "+Inf" ? .infinity : Double(fields[0]) ?? .infinity, default: 0] += count
            }
            figures.count += prometheusSample("aviary_timeline_build_seconds_count", in: reply)
            figures.seconds += prometheusSample("aviary_timeline_build_seconds_sum", in: reply)
        }
        figures.buckets = buckets.sorted { $0.key < $1.key }.map { (bound: $0.key, count: $0.value) }
        return figures
    }

    private static func loadEdges(_ path: String) throws -> [(Int, Int)] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return text.split(whereSeparator: \.isNewline).compactMap { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
            guard !line.hasPrefix("%"), fields.count >= 2, let a = Int(fields[0]), let b = Int(fields[1]) else { return nil }
            return (a, b)
        }
    }

    static func format(_ duration: Duration) -> String {
        String(format: "%.1f s", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}

/// The fields of a timeline page the bench checks.
struct BenchPage: Decodable {
    struct Item: Decodable {
        struct Author: Decodable { var id: String }
        var id: String
        var author: Author
    }
    var items: [Item]
    var nextCursor: String?

    /// Throws unless the page has at most `limit` tweets, newest first, all by `author` when given.
    func check(limit: Int, author: String?) throws {
        let ids = items.compactMap { Int64($0.id) }
        guard items.count <= limit, ids.count == items.count, zip(ids, ids.dropFirst()).allSatisfy({ $0 > $1 }),
            author == nil || items.allSatisfy({ $0.author.id == author })
        else {
            throw ValidationError("a timeline page of \(items.count) tweets (limit \(limit)) is not newest first\(author.map { " by \($0)" } ?? "")")
        }
    }
}

/// The read-your-writes samples of the mix: each sampled post watched on one friend's home
/// timeline, read through the service after 5 ms, then at pauses doubling to 250 ms, for up to 5 s
/// after the post's acknowledgement (a delay is known to within its last pause); at most ``open``
/// watches at once, so that watching cannot add a storm of reads to a stack already behind.
final class BenchVisibility: Sendable {
    private struct State {
        var delays: [Duration] = []
        var missed = 0
        var open = 0
        var skipped = 0
        var watches: [Task<Void, Never>] = []
    }
    private let state = Locked(State())
    static let patience = Duration.seconds(5)

    /// Watches open at once at most; a sample offered while that many are open is skipped.
    static let open = 32

    func watch(_ id: String, on friend: BenchUser, from acknowledged: ContinuousClock.Instant, services: BenchServices) {
        guard state.withLock({ state in
            guard state.open < Self.open else {
                state.skipped += 1
                return false
            }
            state.open += 1
            return true
        }) else { return }
        let watch = Task { [self] in
            defer { state.withLock { $0.open -= 1 } }
            var pause = Duration.milliseconds(5)
            while ContinuousClock.now - acknowledged < Self.patience {
                if let page = try? await services.home(of: friend, limit: 10), page.items.contains(where: { $0.id == id }) {
                    let delay = ContinuousClock.now - acknowledged
                    state.withLock { $0.delays.append(delay) }
                    return
                }
                try? await Task.sleep(for: pause)
                // Backing off to 250 ms: a watch must not add a storm of reads to a slow stack.
                pause = min(pause * 2, .milliseconds(250))
            }
            state.withLock { $0.missed += 1 }
        }
        state.withLock { $0.watches.append(watch) }
    }

    /// Waits for every watch to end, then: the samples, the delay's p50 and p99 (a post never seen
    /// counts as the 5 s waited), and how many were never seen.
    func figures() async -> String {
        for watch in state.withLock({ $0.watches }) { await watch.value }
        let (delays, missed, skipped) = state.withLock { ($0.delays, $0.missed, $0.skipped) }
        guard delays.count + missed > 0 else { return "no samples" }
        let all = LoadFigures(calls: delays.count + missed, seconds: 1, latencies: delays + Array(repeating: Self.patience, count: missed))
        return String(
            format: "%d samples, p50 %.2f ms, p99 %.2f ms, not seen within 5 s: %d (%d skipped: %d watches open)",
            delays.count + missed, all.percentile(0.5), all.percentile(0.99), missed, skipped, Self.open)
    }
}

/// A user the bench registered, with their access token and the refresh token that renews it.
struct BenchUser: Sendable {
    var id: String
    var username: String
    var token: String
    var refreshToken: String
    /// For a sign-in of its own (a Mastodon app's password grant).
    var password: String
}

/// The services the timeline bench drives.
struct BenchServices: Sendable {
    let auth: RPCClient
    let graph: RPCClient
    let tweets: RPCClient
    let timeline: RPCClient
    let media: RPCClient
    let redis: RedisClient

    init(configuration: ServiceConfiguration, connections: Int) throws {
        func client(_ service: ServiceName) -> RPCClient {
            var options = RPCClient.Configuration(addresses: configuration.addresses(of: service))
            options.connectionsPerAddress = max(2, connections / 4)
            return RPCClient(configuration: options, logger: Logger(label: "bench"))
        }
        auth = client(.auth)
        graph = client(.socialGraph)
        tweets = client(.tweets)
        timeline = client(.timeline)
        media = client(.media)
        redis = RedisClient(configuration: try RedisConfiguration(url: configuration.redisURL, poolSize: 4), logger: Logger(label: "bench"))
    }

    private struct Registered: Decodable {
        struct Account: Decodable { var id: String }
        var user: Account
        var accessToken: String
        var refreshToken: String
    }

    func register(_ count: Int) async throws -> [BenchUser] {
        let run = String(UInt32.random(in: .min ... .max), radix: 36)
        let users = Locked([BenchUser?](repeating: nil, count: count))
        _ = try await closedLoop(count, workers: 16) { index in
            let name = "b\(run)_\(index)"
            let registered = try await auth.call(
                "auth.register",
                params: ["email": "\(name)@bench.invalid", "password": "bench-password-\(run)", "username": name, "fullname": "Bench \(index)"],
                as: Registered.self)
            users.withLock { $0[index] = BenchUser(
                    id: registered.user.id, username: name, token: registered.accessToken, refreshToken: registered.refreshToken,
                    password: "bench-password-\(run)") }
        }
        return users.withLock { $0.compactMap { $0 } }
    }

    /// `count` new users in a ring, each following the `followees` after it and having posted
    /// `posts` tweets, so that every home timeline holds `followees × posts` entries; then 2 s for
    /// the fan-out to land.
    func network(of count: Int, followees: Int, posts: Int) async throws -> [BenchUser] {
        let users = try await register(count)
        for (index, user) in users.enumerated() {
            for step in 1...followees { try await follow(user, users[(index + step) % users.count]) }
        }
        for round in 0..<posts {
            for user in users { try await post(as: user, "bench post \(round) of \(user.id)") }
        }
        try await Task.sleep(for: .seconds(2))
        return users
    }

    private struct Refreshed: Decodable {
        var accessToken: String
        var refreshToken: String
        var expiresAt: String
    }

    /// `user` with a new access and refresh token of the same session (auth.refresh spends the old
    /// refresh token), and when the new access token expires.
    func refresh(_ user: BenchUser) async throws -> (user: BenchUser, expires: Date) {
        let refreshed = try await auth.call("auth.refresh", params: ["refreshToken": user.refreshToken], as: Refreshed.self)
        guard let expires = RFC3339.parse(refreshed.expiresAt) else {
            throw BenchBadReply(text: "auth.refresh expiresAt \(refreshed.expiresAt)")
        }
        var renewed = user
        (renewed.token, renewed.refreshToken) = (refreshed.accessToken, refreshed.refreshToken)
        return (renewed, expires)
    }

    func follow(_ follower: BenchUser, _ followee: BenchUser) async throws {
        _ = try await graph.send("graph.follow", params: RawJSON(encoding: ["userId": followee.id]), meta: RequestMeta(token: follower.token))
            .result()
    }

    private struct Created: Decodable {
        var id: String
    }

    /// Posts `text` as `user`, with the media of `mediaIds` (uploads of the user's).
    @discardableResult
    func post(as user: BenchUser, _ text: String, mediaIds: [String] = []) async throws -> String {
        var params: [String: JSONValue] = ["text": .string(text)]
        if !mediaIds.isEmpty { params["mediaIds"] = .array(mediaIds.map { .string($0) }) }
        return try await tweets.call("tweets.create", params: params, meta: RequestMeta(token: user.token), as: Created.self).id
    }

    /// `count` small images uploaded by `user` for tweets, as apps upload them; their media ids.
    func uploadImages(_ count: Int, as user: BenchUser) async throws -> [String] {
        var ids: [String] = []
        for _ in 0..<count {
            let image = BenchFiles.image(bytes: 4096)
            ids.append(try await BenchUpload.upload(image, type: "image/png", media: media, meta: RequestMeta(token: user.token)).media.id)
        }
        return ids
    }

    /// A page of `user`'s home timeline, checked: at most `limit` tweets, newest first.
    @discardableResult
    func home(of user: BenchUser, limit: Int, cursor: String? = nil) async throws -> BenchPage {
        let after = cursor.map { #","cursor":"\#($0)""# } ?? ""
        let page = try await timeline.send(
            "timeline.home", params: RawJSON(unchecked: Array(#"{"limit":\#(limit)\#(after)}"#.utf8)), meta: RequestMeta(token: user.token)
        ).decode(BenchPage.self)
        try page.check(limit: limit, author: nil)
        return page
    }

    /// A page of `author`'s user timeline as `viewer` reads it, checked: at most `limit` tweets, all
    /// `author`'s, newest first.
    @discardableResult
    func userTimeline(of author: BenchUser, as viewer: BenchUser, limit: Int, cursor: String? = nil) async throws -> BenchPage {
        let after = cursor.map { #","cursor":"\#($0)""# } ?? ""
        let page = try await timeline.send(
            "timeline.user", params: RawJSON(unchecked: Array(#"{"userId":"\#(author.id)","limit":\#(limit)\#(after)}"#.utf8)),
            meta: RequestMeta(token: viewer.token)
        ).decode(BenchPage.self)
        try page.check(limit: limit, author: author.id)
        return page
    }

    /// The newest `entries` of `owner`'s home (then `owner` is the reader) or user timeline, as
    /// DeathStarBench's reads of entries `start` to `start + 10` need them: pages of up to 100
    /// following their cursors, each checked, until that many are read or the timeline ends.
    func read(_ timeline: MixCall, of owner: BenchUser, as reader: BenchUser, entries: Int) async throws {
        var read = 0
        var cursor: String?
        repeat {
            let limit = min(entries - read, PageLimit.maximum)
            let page =
                timeline == .home
                ? try await home(of: reader, limit: limit, cursor: cursor) : try await userTimeline(of: owner, as: reader, limit: limit, cursor: cursor)
            read += page.items.count
            cursor = page.nextCursor
        } while read < entries && cursor != nil
    }

    /// For each sample: posts as `author`, then polls every follower's home set in Redis until the
    /// tweet is in all of them; the latency runs from the create's acknowledgement.
    func fanOutLatencies(of author: BenchUser, to fans: [BenchUser], samples: Int) async throws -> LoadFigures {
        var latencies: [Duration] = []
        let started = ContinuousClock.now
        for index in 0..<samples {
            let id = try await post(as: author, "fan-out words \(index)")
            let acknowledged = ContinuousClock.now
            let posted = Int64(id) ?? .max
            var waiting = fans.map { "aviary:timeline:home:\($0.id)" }
            while !waiting.isEmpty {
                // A timeline's last entry is its newest (PackedTimeline): arrived once it is this tweet or
                // newer. A sorted set of the layout before issue 44 (run against for comparison)
                // answers WRONGTYPE, and is asked for the tweet's member.
                let ends = try await redis.pipeline(waiting.map { ["GETRANGE", RedisArgument($0), -8, -1] })
                let old = zip(waiting, ends).filter { $0.1.errorMessage?.hasPrefix("WRONGTYPE") == true }.map(\.0)
                let member = RedisArgument(LegacyTimeline.member(posted))
                let scores = try await redis.pipeline(old.map { ["ZSCORE", RedisArgument($0), member] })
                let arrived = Set(zip(waiting, ends).filter { (PackedTimeline.newestID(inEnd: $0.1.bytes ?? []) ?? 0) >= posted }.map(\.0))
                    .union(zip(old, scores).filter { !$0.1.isNull }.map(\.0))
                waiting = waiting.filter { !arrived.contains($0) }
                guard ContinuousClock.now - acknowledged < .seconds(10) else {
                    throw ValidationError("tweet \(id) did not reach \(waiting.count) followers' timelines within 10 s")
                }
            }
            latencies.append(ContinuousClock.now - acknowledged)
        }
        let elapsed = ContinuousClock.now - started
        return LoadFigures(
            calls: samples, seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            latencies: latencies)
    }

    /// `count` calls of `body` (with indexes 0..<count) by `workers` concurrent loops.
    func closedLoop(_ count: Int, workers: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws -> LoadFigures {
        let next = BenchCounter()
        let started = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
            for _ in 0..<workers {
                group.addTask(executorPreference: loadWorkerExecutor()) {
                    var latencies: [Duration] = []
                    while true {
                        let index = next.take()
                        guard index < count else { return latencies }
                        let began = ContinuousClock.now
                        try await body(index)
                        latencies.append(ContinuousClock.now - began)
                    }
                }
            }
            return try await group.reduce(into: [Duration]()) { $0 += $1 }
        }
        let elapsed = ContinuousClock.now - started
        return LoadFigures(
            calls: count, seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            latencies: latencies)
    }

    func shutdown() async {
        for client in [auth, graph, tweets, timeline, media] { await client.shutdown() }
        await redis.shutdown()
    }
}

/// The kinds of call in the DeathStarBench mix, in the order `--mix-weights` gives their weights.
/// What the mix's calls ask for (`--mix`).
enum MixShape: String, ExpressibleByArgument, CustomStringConvertible {
    /// DeathStarBench's: reads of entries `start` to `start + 10`, `start` from 0 to 100; posts of
    /// 280 characters with 1 to 6 mentions of real users, 1 to 6 links and 0 to 4 media.
    case deathstarbench
    /// The first page of 10 entries; posts of a few words.
    case pages

    var description: String { rawValue == "pages" ? "first pages of 10, short posts" : "DeathStarBench's depths and posts" }

    /// How many entries a read needs.
    func entriesRead() -> Int {
        self == .pages ? 10 : BenchRandom.pick(0...100) + 10
    }

    /// A post's media: DeathStarBench's 0 to 4, of the author's `uploads`; none for short posts.
    func media(of uploads: [String]) -> [String] {
        guard self == .deathstarbench, !uploads.isEmpty else { return [] }
        return Array(uploads.shuffled().prefix(BenchRandom.pick(0...min(4, uploads.count))))
    }

    /// A post's text: DeathStarBench's 1 to 6 mentions of random `users`, 1 to 6 links and words up
    /// to 280 characters (a link counts as 23), or a few words.
    func text(_ index: Int, mentioning users: [BenchUser]) -> String {
        guard self == .deathstarbench else { return "bench words \(index) #reed" }
        let mentions = (0..<BenchRandom.pick(1...6)).map { _ in "@" + users[BenchRandom.pick(0..<users.count)].username }
        let links = (0..<BenchRandom.pick(1...6)).map { _ in "https://example.com/\(index)/\(BenchRandom.pick(0..<1_000_000))" }
        let used = mentions.reduce(0) { $0 + $1.count + 1 } + links.count * 24
        var words = "post \(index)"
        while words.count + 6 <= 280 - used { words += " words" }
        return ([words] + mentions + links).joined(separator: " ")
    }
}

enum MixCall: Int, CaseIterable {
    /// Interpolated as their names: `home`, `user`, `create`.
    case home, user, create

    /// The kind that `pick` (from 0 to the weights' sum, excluded) falls on.
    static func pick(_ pick: Int, weights: [Int]) -> MixCall {
        var bound = 0
        for kind in allCases.dropLast() {
            bound += weights[kind.rawValue]
            if pick < bound { return kind }
        }
        return .create
    }
}
