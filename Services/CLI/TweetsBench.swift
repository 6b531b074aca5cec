import ArgumentParser
import AuthTokens
import Foundation
import Logging
import RPC
import ServiceKit
import Synchronization

/// `aviary bench tweets`: create throughput and hydrated batch reads of a running tweets service.
struct TweetsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tweets",
        abstract: "tweets.create with 32 clients (target ≥ 1,500 calls/s); tweets.getMany of 20 hydrated tweets.",
        discussion: """
            Runs against a running tweets service (with auth running, for author summaries). The authors are synthetic \
            users whose access tokens the bench signs with the token signing key (--signing-key or \
            AVIARY_TOKEN_SIGNING_KEY); tweets.getMany needs the service credential (--service-credential or \
            AVIARY_SERVICE_SECRET). The tweets it posts stay, with their events: run it against a test stack.
            """)

    @Option(help: "host:port of the tweets service (default: AVIARY_TWEETS_ADDRESSES or its default port).")
    var address: String?

    @Option(name: .customLong("service-credential"), help: "The service credential (default: AVIARY_SERVICE_SECRET).")
    var serviceCredential: String?

    @Option(name: .customLong("signing-key"), help: "Base64 of the 32-byte Ed25519 token signing seed (default: AVIARY_TOKEN_SIGNING_KEY).")
    var signingKey: String?

    @Option(help: "Concurrent clients, one connection each.")
    var clients = 32

    @Option(help: "Seconds of each phase.")
    var seconds = 5

    @Option(help: "Tweets per tweets.getMany call.")
    var batch = 20

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let configuration = try ServiceConfiguration.load(service: .tweets)
        guard let credential = serviceCredential ?? environment["AVIARY_SERVICE_SECRET"],
            let seedText = signingKey ?? environment["AVIARY_TOKEN_SIGNING_KEY"],
            let seed = Data(base64Encoded: seedText), seed.count == 32
        else {
            throw ValidationError("set the service credential and the signing key (flags, or AVIARY_SERVICE_SECRET and AVIARY_TOKEN_SIGNING_KEY)")
        }
        let issuer = try await AccessTokenIssuer(keys: TokenKeys(signingSeed: Array(seed)), lifetime: .seconds(3600))
        var clientConfiguration = RPCClient.Configuration(addresses: [address ?? configuration.addresses(of: .tweets)[0]])
        clientConfiguration.connectionsPerAddress = clients
        let tweets = RPCClient(configuration: clientConfiguration, logger: Logger(label: "bench"))
        defer { Task { await tweets.shutdown() } }

        // Synthetic authors far above any id issued in the next decades, one per client.
        let firstAuthor = (Int64(1) << 62) + Int64.random(in: 0..<(Int64(1) << 40)) * 1024
        var tokens: [String] = []
        for worker in 0..<clients {
            tokens.append(try await issuer.issue(userID: firstAuthor + Int64(worker), sessionID: Int64.random(in: 1...Int64.max)).token)
        }
        let authorTokens = tokens
        let created = Mutex<[String]>([])
        let counter = Atomic<Int>(0)
        let creates = try await runLoad(workers: clients, duration: .seconds(seconds)) { worker in
            let number = counter.add(1, ordering: .relaxed).newValue
            let tweet = try await tweets.call(
                "tweets.create", params: ["text": "bench tweet \(number) #bench"], meta: RequestMeta(token: authorTokens[worker]),
                as: CreatedTweet.self)
            created.withLock { $0.append(tweet.id) }
        }
        print("tweets.create, \(clients) clients:  \(creates.summary)   (target ≥ 1,500 calls/s)")

        let ids = created.withLock { $0 }
        guard ids.count >= batch else { throw ValidationError("only \(ids.count) tweets were created") }
        let meta = RequestMeta(service: credential)
        let viewer = String(firstAuthor)
        let reads = try await runLoad(workers: clients, duration: .seconds(seconds)) { _ in
            let start = Int.random(in: 0...(ids.count - batch))
            let params = try RawJSON(
                encoding: ["ids": JSONValue.array(ids[start..<start + batch].map { .string($0) }), "viewerId": .string(viewer)])
            let response = try await tweets.send("tweets.getMany", params: params, meta: meta)
            _ = try response.result()
        }
        print("tweets.getMany of \(batch), \(clients) clients:  \(reads.summary)   (\(Int(reads.rate) * batch) tweets/s)")
    }

    private struct CreatedTweet: Decodable {
        var id: String
    }
}
