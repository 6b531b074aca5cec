import ArgumentParser
import AviaryAPI
import AviaryJSON
import Foundation

/// Decoding a page of tweets as a caller of `timeline.home` does (the gateway for every Mastodon
/// page): `WireDecoding` against Foundation's `JSONDecoder`, in this process, nothing else running.
struct JSONBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "json",
        abstract: "Decode a page of tweets (Page<Tweet>): the wire decoder against Foundation's JSONDecoder.")

    @Option(help: "Tweets on the page.")
    var tweets = 20

    @Option(help: "Seconds per decoder per round.")
    var seconds = 2.0

    @Option(help: "Rounds; the median is reported.")
    var rounds = 5

    func validate() throws {
        guard (1...1000).contains(tweets) else { throw ValidationError("--tweets must be 1 to 1000, not \(tweets)") }
        guard seconds > 0, seconds <= 60 else { throw ValidationError("--seconds must be above 0 and at most 60, not \(seconds)") }
        guard (1...100).contains(rounds) else { throw ValidationError("--rounds must be 1 to 100, not \(rounds)") }
    }

    func run() async throws {
        let page = Self.page(of: tweets)
        let json = Data(try WireEncoding.encode(page))
        print("Page<Tweet> of \(tweets) (\(json.count) bytes, as a service writes it): replies, mentions, media and reposts among them")
        let decoders: [(name: String, decode: (Data) throws -> Page<Tweet>)] = [
            ("WireDecoding", { try WireDecoding.decode(Page<Tweet>.self, from: $0) }),
            ("Foundation's JSONDecoder", { try JSONCoding.decoder().decode(Page<Tweet>.self, from: $0) }),
        ]
        var figures = Array(repeating: [Double](), count: decoders.count)
        for round in 1...rounds {
            for (index, decoder) in decoders.enumerated() {
                let perPage = try Self.time(seconds: seconds) {
                    let decoded = try decoder.decode(json)
                    guard decoded.items == page.items, decoded.nextCursor == page.nextCursor else {
                        throw ValidationError("\(decoder.name) decoded another page than was written")
                    }
                }
                figures[index].append(perPage)
                print(String(format: "round %d: %@ %.1f µs per page", round, decoder.name, perPage))
            }
        }
        for (index, decoder) in decoders.enumerated() {
            print(String(format: "%@: %.1f µs per page (median of %d; every page checked equal to the one written)", decoder.name, median(figures[index]), rounds))
        }
    }

    /// Microseconds per call of `body`, called for about `seconds`.
    private static func time(seconds: Double, _ body: () throws -> Void) throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        var calls = 0
        while (clock.now - start) < .seconds(seconds) {
            for _ in 0..<16 { try body() }
            calls += 16
        }
        return (clock.now - start) / .microseconds(1) / Double(calls)
    }

    /// A page such as a home timeline holds: texts of a tweet's usual length with a hashtag and a
    /// mention, every fourth a reply, every fifth with an image, every seventh a repost.
    static func page(of count: Int) -> Page<Tweet> {
        func user(_ id: Int64) -> UserSummary {
            UserSummary(id: EntityID(id), username: "user\(id)", fullname: "User Number \(id)", profileImageUrl: id % 3 == 0 ? nil : "https://media.example/u/\(id).jpg")
        }
        let created = Date(timeIntervalSince1970: 1_764_000_000)
        let items = (0..<Int64(count)).map { index in
            let id = 7_400_000_000_000_000_000 - index * 4_096
            var tweet = Tweet(
                id: EntityID(id), author: user(1_000 + index % 13),
                text: "Tweet \(index): the ferry is late again, so here is a thought about #commuting and @user\(2_000 + index) while we wait on the pier",
                createdAt: created.addingTimeInterval(-Double(index) * 61), mentions: [user(2_000 + index)], hashtags: ["commuting"],
                likes: index * 3, replies: index % 5, likedByMe: index % 2 == 0, reposts: index % 4)
            if index % 4 == 3 {
                tweet.replyTo = EntityID(id - 1)
                tweet.replyToUser = user(1_000 + (index + 1) % 13)
            }
            if index % 5 == 4 {
                tweet.media = [Media(id: EntityID(id + 1), url: "https://media.example/m/\(id + 1).jpg", contentType: "image/jpeg", byteSize: 182_044, width: 1_200, height: 800)]
            }
            if index % 7 == 6 {
                tweet.repostedBy = user(3_000 + index)
                tweet.repostId = EntityID(id + 2)
            }
            return tweet
        }
        return Page(items: items, nextCursor: "\(items.last?.entryId.value ?? 0)")
    }
}
