import ArgumentParser
import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Logging
import RPC
import ServiceKit
import Synchronization

/// `aviary bench tweets`: create throughput and hydrated batch reads of a running tweets service.
struct TweetsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tweets",
        abstract: """
            tweets.create with 32 clients (target ≥ 1,500 calls/s); tweets.getMany of 20 hydrated tweets; \
            tweets.trending while posts arrive (target p99 < 5 ms).
            """,
        discussion: """
            Runs against running tweets and auth services. The authors are accounts the bench registers through \
            auth.register (auth allows 5 an hour from one address by default: raise \
            AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR on a test stack); tweets.getMany needs the service credential \
            (--service-credential, AVIARY_SERVICE_SECRET, or else the database where a default install keeps it). \
            The accounts and tweets it makes stay, with their events: run it against a test stack.
            """)

    @Option(help: "host:port of the tweets service (default: AVIARY_TWEETS_ADDRESSES or its default port).")
    var address: String?

    @Option(name: .customLong("service-credential"), help: "The service credential (default: AVIARY_SERVICE_SECRET).")
    var serviceCredential: String?

    @Option(help: "host:port of the auth service (default: AVIARY_AUTH_ADDRESSES or its default port).")
    var authAddress: String?

    @Option(help: "Accounts to register and post as.")
    var authors = 8

    @Option(help: "Concurrent clients, one connection each.")
    var clients = 32

    @Option(help: "Seconds of each phase.")
    var seconds = 5

    @Option(help: "Tweets per tweets.getMany call.")
    var batch = 20

    @Option(help: "tweets.trending calls a second in the last phase.")
    var trendingRate = 1000

    @Option(help: "Posts a second (each with 1 to 3 of 500 hashtags, the first ones used most) while trending is read.")
    var postRate = 500

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let configuration = try ServiceConfiguration.load(service: .tweets)
        let credential = try await BenchSecrets.credential(
            serviceCredential ?? environment["AVIARY_SERVICE_SECRET"], postgresURL: configuration.postgresURL)
        var clientConfiguration = RPCClient.Configuration(addresses: [address ?? configuration.addresses(of: .tweets)[0]])
        clientConfiguration.connectionsPerAddress = clients
        let tweets = RPCClient(configuration: clientConfiguration, logger: Logger(label: "bench"))
        let auth = RPCClient(
            configuration: .init(addresses: [authAddress ?? configuration.addresses(of: .auth)[0]]), logger: Logger(label: "bench"))
        defer {
            Task {
                await tweets.shutdown()
                await auth.shutdown()
            }
        }

        let accounts = try await register(max(1, authors), auth: auth)
        let authorTokens = accounts.map(\.accessToken)
        let created = Locked<[String]>([])
        let counter = Atomic<Int>(0)
        let statements = BenchStatements()
        var before = try? await statements.total()
        let creates = try await runLoad(workers: clients, duration: .seconds(seconds)) { worker in
            let number = counter.add(1, ordering: .relaxed).newValue
            let tweet = try await tweets.call(
                "tweets.create", params: ["text": "bench tweet \(number) #bench"], meta: RequestMeta(token: authorTokens[worker % authorTokens.count]),
                as: CreatedTweet.self)
            created.withLock { $0.append(tweet.id) }
        }
        print("tweets.create, \(clients) clients:  \(creates.summary)   (target ≥ 1,500 calls/s)")
        print(await statements.perCall(since: before, calls: creates.calls))

        let ids = created.withLock { $0 }
        guard ids.count >= batch else { throw ValidationError("only \(ids.count) tweets were created") }
        let meta = RequestMeta(service: credential)
        let viewer = accounts[0].user.id
        before = try? await statements.total()
        let reads = try await runLoad(workers: clients, duration: .seconds(seconds)) { _ in
            let start = BenchRandom.pick(0...(ids.count - batch))
            let params = try RawJSON(
                encoding: ["ids": JSONValue.array(ids[start..<start + batch].map { .string($0) }), "viewerId": .string(viewer)])
            let response = try await tweets.send("tweets.getMany", params: params, meta: meta)
            _ = try response.result()
        }
        print("tweets.getMany of \(batch), \(clients) clients:  \(reads.summary)   (\(Int(reads.rate) * batch) tweets/s)")
        print(await statements.perCall(since: before, calls: reads.calls))
        await statements.close()
        try await measureTrending(tweets: tweets, authorTokens: authorTokens)
    }

    /// tweets.trending paced at ``trendingRate`` while posts with hashtags arrive at ``postRate``.
    /// Each answer is checked: at most 20 hashtags, most used first. A failed or wrong answer counts
    /// as an error, and in the percentiles as the timeout.
    private func measureTrending(tweets: RPCClient, authorTokens: [String]) async throws {
        try validateRate(trendingRate, option: "--trending-rate")
        try validateRate(postRate, option: "--post-rate")
        let duration = Duration.seconds(seconds)
        async let posts = runAtRate(postRate, for: duration) { number in
            // Squared uniform draws: tag 0 is used most, as a few hashtags trend in a real hour.
            let tags = (0..<BenchRandom.pick(1...3)).map { _ -> String in
                let draw = Double(BenchRandom.pick(0..<1_000_000)) / 1_000_000
                return "#benchtag\(Int(draw * draw * 500))"
            }
            _ = try await tweets.send(
                "tweets.create", params: try RawJSON(encoding: ["text": "trending bench \(number) " + tags.joined(separator: " ")]),
                meta: RequestMeta(token: authorTokens[number % authorTokens.count])
            ).result()
        }
        let trending = try await runAtRate(trendingRate, for: duration) { _ in
            let top = try await tweets.call("tweets.trending", params: ["limit": 20], as: [TrendingHashtag].self)
            guard top.count <= 20, top.map(\.uses) == top.map(\.uses).sorted(by: >) else {
                throw BenchBadReply(text: "\(top.prefix(3))")
            }
        }
        let posted = try await posts
        let outcome = BenchOutcome(figures: trending, expected: trendingRate * seconds, cpuSeconds: 0)
        print(
            "tweets.trending of 20 at \(trendingRate) calls/s while \(postRate) posts/s arrive (\(posted.calls) posted, "
                + "each answer checked):  \(outcome.summary)   (target p99 < 5 ms)")
    }

    private struct CreatedTweet: Decodable {
        var id: String
    }

    private struct Registered: Decodable {
        struct Account: Decodable { var id: String }
        var user: Account
        var accessToken: String
    }

    /// New accounts, registered through auth.
    private func register(_ count: Int, auth: RPCClient) async throws -> [Registered] {
        var accounts: [Registered] = []
        for _ in 0..<count {
            let name = "bench_" + String(UInt32.random(in: .min ... .max), radix: 16)
            do {
                accounts.append(
                    try await auth.call(
                        "auth.register",
                        params: [
                            "email": "\(name)@bench.invalid", "password": "bench-\(UUID().uuidString)", "username": name,
                            "fullname": "Bench \(name)",
                        ], as: Registered.self))
            } catch let error as RPCError where error.reason == "rate_limited" {
                throw ValidationError("auth refused to register more accounts (\(error.message)); raise its limit or lower --authors")
            }
        }
        return accounts
    }
}
