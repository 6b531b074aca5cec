import AviaryAPI
import AviaryJSON
import RPC
import TestSupport
import Testing

/// The multi-service harness the service suites build on: real auth and social-graph processes that
/// find each other, accounts registered through auth, and a restart on the same ports.
@Suite struct ServiceStackTests {
    @Test func servicesFindEachOtherAndSurviveARestart() async throws {
        let stack = try await ServiceStack.start(["auth", "social-graph"], redisDatabase: 15)
        let users = try await stack.makeUsers(3, "stack")
        #expect(Set(users.map(\.id)).count == 3)
        for follower in users.dropFirst() {
            let result: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": users[0].idValue], as: follower)
            #expect(result["following"] == true)
        }
        // auth asks social-graph for the counts: the two services were wired to each other.
        let profile: JSONValue = try await stack.call("auth", "auth.getUser", ["userId": users[0].idValue], as: users[1])
        #expect(profile["stats"]?["followers"] == 2)
        #expect(profile["isFollowed"] == true)

        try await stack.restart("social-graph")
        let after: JSONValue = try await stack.call("social-graph", "graph.stats", ["userId": users[0].idValue])
        #expect(after["followers"] == 2)

        let summaries: JSONValue = try await stack.callInternal(
            "auth", "auth.getUsers", ["usernames": .array([.string(users[2].username.uppercased()), "nobody_here"])])
        #expect(summaries.arrayValue?.map { $0["id"] } == [users[2].idValue])
    }

    @Test func aSessionEndedAtAuthIsRefusedByAnotherService() async throws {
        let stack = try await ServiceStack.start(["auth", "social-graph"], redisDatabase: 13)
        let users = try await stack.makeUsers(2, "revoked")
        // Verified once, so social-graph remembers the signature.
        let _: JSONValue = try await stack.call("social-graph", "graph.relationship", ["userId": users[1].idValue], as: users[0])
        let _: JSONValue = try await stack.call("auth", "auth.logout", as: users[0])
        // social-graph hears of the logout through Redis pub/sub, well within this bound.
        let refused = try await eventually(timeout: .seconds(2), interval: .milliseconds(5)) {
            do {
                let _: JSONValue = try await stack.call("social-graph", "graph.relationship", ["userId": users[1].idValue], as: users[0])
                return false
            } catch let error as RPCError {
                return error.reason == "unauthenticated"
            }
        }
        #expect(refused)
        // The other user's session is untouched.
        let _: JSONValue = try await stack.call("social-graph", "graph.relationship", ["userId": users[0].idValue], as: users[1])
    }
}
