import AviaryAPI
import AviaryJSON
import Foundation
import Logging
import RPC
import Redis
import Testing
import TestSupport

extension TimelineServiceTests {
@Suite("user timelines and refusals")
struct UserTimelineTests {
    private func userTimeline(_ stack: TimelineStack, _ params: [String: JSONValue], as user: StackUser? = nil) async throws -> TweetPage {
        try await stack.stack.call("timeline", "timeline.user", params, as: user, decoding: TweetPage.self)
    }

    @Test("timeline.user pages through a user's tweets newest first, from the cache and past it", .timeLimit(.minutes(1)))
    func userTimeline() async throws {
        let stack = try await TimelineStack.shared()
        let author = try await stack.stack.makeUser("author")
        let ids = try await stack.post((0..<25).map { (author, "numbered words \($0)") })
        try await stack.settle()
        let newestFirst = ids.sorted(by: >)
        let first = try await userTimeline(stack, ["userId": author.idValue, "limit": 10])
        #expect(first.items.map(\.id.value) == Array(newestFirst.prefix(10)))
        #expect(first.items.allSatisfy { $0.author.id == author.id && $0.text?.hasPrefix("numbered words") == true })
        var all = first.items.map(\.id.value)
        var cursor = first.nextCursor
        while let next = cursor {
            let page = try await userTimeline(stack, ["userId": author.idValue, "limit": 10, "cursor": .string(next)])
            all += page.items.map(\.id.value)
            cursor = page.nextCursor
        }
        #expect(all == newestFirst)

        // A tweet posted after the cache was built joins it through fan-out.
        let later = try await stack.post([(author, "a later word")])[0]
        try await stack.settle()
        #expect(try await userTimeline(stack, ["userId": author.idValue, "limit": 1]).items.map(\.id.value) == [later])
        // And the cache gone, the tweets service answers.
        _ = try await stack.stack.redis.send(["DEL", RedisArgument("aviary:timeline:user:\(author.id)")])
        #expect(try await userTimeline(stack, ["userId": author.idValue, "limit": 3]).items.map(\.id.value) == [later] + newestFirst.prefix(2))
    }

    @Test("a user without tweets has an empty timeline; an unknown one is not_found")
    func emptyAndUnknown() async throws {
        let stack = try await TimelineStack.shared()
        let quiet = try await stack.stack.makeUser("quiet")
        let page = try await userTimeline(stack, ["userId": quiet.idValue])
        #expect(page.items.isEmpty && page.nextCursor == nil)
        let home = try await stack.home(of: quiet)
        #expect(home.items.isEmpty && home.nextCursor == nil)
        await #expect { try await userTimeline(stack, ["userId": "9000000000000000001"]) } throws: { ($0 as? RPCError)?.reason == "not_found" }
    }

    @Test("bad params are validation errors naming the field; a home timeline needs a token")
    func refusals() async throws {
        let stack = try await TimelineStack.shared()
        let user = stack.users[0]
        let cases: [(String, [String: JSONValue], String)] = [
            ("timeline.home", ["limit": 0], "limit"),
            ("timeline.home", ["limit": 101], "limit"),
            ("timeline.home", ["cursor": "not a cursor"], "cursor"),
            ("timeline.user", ["userId": "12ab"], "userId"),
            ("timeline.user", ["userId": user.idValue, "cursor": .string(KeysetCursor(key: 5, id: 6).encoded)], "cursor"),
        ]
        for (method, params, field) in cases {
            let error = await rpcError {
                _ = try await stack.stack.call("timeline", method, params, as: user, decoding: TweetPage.self)
            }
            #expect(error?.reason == "validation" && error?.field == field, "\(method) \(params): \(String(describing: error))")
        }
        await #expect { try await stack.stack.call("timeline", "timeline.home", decoding: TweetPage.self) } throws: {
            ($0 as? RPCError)?.reason == "unauthenticated"
        }
    }

    @Test("another service's refusal that is not the caller's (a wrong service credential) is answered unavailable")
    func peerRefusalsAreNotPassedOn() async throws {
        let stack = try await TimelineStack.shared()
        let reader = try await stack.stack.makeUser("misread")
        let misconfigured = try await stack.stack.startExtraInstance(
            "timeline", environment: ["AVIARY_SERVICE_SECRET": "a credential no other service accepts"])
        let client = RPCClient(configuration: .init(addresses: [misconfigured.rpcAddress]), logger: .init(label: "misconfigured"))
        defer {
            misconfigured.terminate()
            Task { await client.shutdown() }
        }
        // Building this reader's home asks social-graph (graph.followingIds), which refuses the credential.
        let error = await rpcError {
            _ = try await client.call("timeline.home", meta: RequestMeta(token: reader.token), as: TweetPage.self)
        }
        #expect(error?.reason == "unavailable", "\(String(describing: error))")
    }
}
}
