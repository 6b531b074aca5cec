import AviaryAPI
import Logging
import RPC
import ServiceKit
import SocialGraphService
import TestSupport
import Testing

/// social-graph built in this test process (`ServiceApplication.prepare`) on the suite's database,
/// Redis and accounts stand-in, its handlers called through its router: no socket, no process. The
/// suite's `aviary-social-graph` process shares the database, so each sees what the other wrote.
@Suite("social-graph's handlers, called in-process through its router")
struct InProcessTests {
    private static let service = Task {
        let stack = try await GraphStack.shared()
        let configuration = try ServiceConfiguration.load(service: .socialGraph, environment: stack.environment)
        return try await ServiceApplication.prepare(
            SocialGraphService.definition, configuration: configuration, logger: Logger(label: "graph-in-process"))
    }

    @Test("a follow through the router is the service's: the process reads it, and the rules hold")
    func followThroughTheRouter() async throws {
        let stack = try await GraphStack.shared()
        let router = try await Self.service.value.router
        let (ann, bob) = (try await stack.makeUser("ann"), try await stack.makeUser("bob"))

        let state = try await router.call(GraphAPI.follow, UserParams(userId: bob.id), meta: RequestMeta(token: ann.token))
        #expect(state.following)
        let seen: Relationship = try await stack.call("graph.relationship", ["userId": .id(bob.id)], as: ann)
        #expect(seen.isFollowed)
        let followers = try await router.call(
            GraphAPI.followerIds, IDPageParams(userId: bob.id), meta: RequestMeta(service: stack.serviceCredential))
        #expect(followers.items == [ann.id.description])

        let anonymous = await rpcError { _ = try await router.call(GraphAPI.follow, UserParams(userId: bob.id)) }
        #expect(anonymous?.code == -32001)
        let internalAsUser = await rpcError {
            _ = try await router.call(GraphAPI.followerIds, IDPageParams(userId: bob.id), meta: RequestMeta(token: ann.token))
        }
        #expect(internalAsUser?.code == -32003)
        let selfFollow = await rpcError {
            _ = try await router.call(GraphAPI.follow, UserParams(userId: ann.id), meta: RequestMeta(token: ann.token))
        }
        #expect(selfFollow?.code == -32022)
        #expect(selfFollow?.field == "userId")
    }
}
