import AviaryJSON
import Foundation
import Testing
import TestSupport

/// A pinned tweet on a profile, through the edge.
@Suite("Pinned tweets")
struct PinTests {
    @Test("one pinned tweet a profile: replaced, gone with its tweet, hidden across a block; each refusal")
    func pins() async throws {
        let edge = try await GatewayStack.shared()
        let (ana, ben) = (try await edge.register("ana"), try await edge.register("ben"))
        func call(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser?) async throws -> JSONValue {
            try await EdgeHTTP.rpc(edge.url, method, params, token: user?.token)
        }
        func pinned(as viewer: EdgeUser?) async throws -> JSONValue? {
            try await call("tweets.pinned", ["userId": .string(ana.id)], as: viewer)["result"]?["tweet"]
        }
        let first = try #require(try await call("tweets.create", ["text": "pin me"], as: ana)["result"]?["id"])
        let second = try #require(try await call("tweets.create", ["text": "no, me"], as: ana)["result"]?["id"])
        #expect(try await pinned(as: nil) == .null)
        #expect(try await call("tweets.pin", ["tweetId": first], as: ana)["result"]?["pinnedTweetId"] == first)
        #expect(try await pinned(as: ben)?["id"] == first)
        #expect(try await call("tweets.pin", ["tweetId": second], as: ana)["result"]?["pinnedTweetId"] == second)
        #expect(try await pinned(as: nil)?["text"] == "no, me")

        #expect(try await call("tweets.pin", ["tweetId": first], as: ben)["error"]?["data"]?["reason"] == "forbidden")
        #expect(try await call("tweets.pin", ["tweetId": "12345"], as: ana)["error"]?["data"]?["reason"] == "not_found")
        #expect(try await call("tweets.pin", ["tweetId": first], as: nil)["error"]?["data"]?["reason"] == "unauthenticated")

        // Hidden from someone on the other side of a block.
        _ = try await call("graph.block", ["userId": .string(ben.id)], as: ana)
        #expect(try await pinned(as: ben) == .null)
        _ = try await call("graph.unblock", ["userId": .string(ben.id)], as: ana)
        #expect(try await pinned(as: ben)?["id"] == second)
        // Deleted, it is pinned no more; unpinning is idempotent.
        _ = try await call("tweets.delete", ["tweetId": second], as: ana)
        #expect(try await pinned(as: nil) == .null)
        #expect(try await call("tweets.unpin", as: ana)["result"]?["pinnedTweetId"] == .null)
        #expect(try await call("tweets.unpin", as: ana)["result"]?["pinnedTweetId"] == .null)
    }
}
