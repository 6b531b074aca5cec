import AviaryAPI
import AviaryJSON
import Logging
import RPC
import TestSupport
import Testing

@Suite("when the accounts service is down")
struct OutageTests {
    @Test("calls that need it are unavailable; an unfollow that removes an edge does not need it")
    func accountsDown() async throws {
        let stack = try await GraphStack.shared()
        let (nina, omar, pia) = (try await stack.makeUser("nina"), try await stack.makeUser("omar"), try await stack.makeUser("pia"))
        try await stack.follow(nina, omar)

        // A second instance on the same database, whose accounts service is a port nobody listens on.
        var environment = stack.environment
        environment["AVIARY_AUTH_ADDRESSES"] = "127.0.0.1:\(try freePort())"
        let orphan = try await GraphStack.startInstance(environment)
        let client = RPCClient(configuration: .init(addresses: [orphan.rpcAddress]), logger: Logger(label: "graph-tests"))
        defer { Task { await client.shutdown() } }

        let follow = await rpcError {
            _ = try await client.call(
                "graph.follow", params: ["userId": JSONValue.id(pia.id)], meta: RequestMeta(token: nina.token), as: FollowResult.self)
        }
        #expect(follow?.code == -32050)
        #expect(follow?.reason == "unavailable")
        let list = await rpcError {
            _ = try await client.call("graph.followers", params: ["userId": JSONValue.id(omar.id)], as: JSONValue.self)
        }
        #expect(list?.code == -32050)
        #expect(try await stack.storedCounts(pia.id) == nil)

        let unfollowed = try await client.call(
            "graph.unfollow", params: ["userId": JSONValue.id(omar.id)], meta: RequestMeta(token: nina.token), as: FollowResult.self)
        #expect(unfollowed.following == false)
        #expect(try await stack.storedCounts(omar.id) == StatsResult(followers: 0, following: 0))
        // What needs only the graph's own tables still answers.
        let stats = try await client.call("graph.stats", params: ["userId": JSONValue.id(nina.id)], as: StatsResult.self)
        #expect(stats == StatsResult(followers: 0, following: 0))
    }
}
