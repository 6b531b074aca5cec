import AviaryAPI
import ChannelSupport
import AviaryJSON
import Logging
import RPC
import TestSupport
import Testing

/// A faltering network between two services: a timeline instance reaches tweets through a proxy
/// that a test slows down or cuts. Calls keep to their deadlines, a cut link is refused at once,
/// and the link's return is taken up again without a restart.
@Suite struct LinkFaultTests {
    @Test func aSlowOrCutLinkToTweetsCostsTheDeadlineAtMostAndHeals() async throws {
        let stack = try await ServiceStack.start(["auth", "social-graph", "tweets", "timeline", "media"], redisDatabase: 3)
        let proxy = try TCPProxy(targetPorts: [stack.process("tweets").rpcPort])
        defer { proxy.close() }
        let timeline = try await stack.startExtraInstance(
            "timeline", environment: ["AVIARY_TWEETS_ADDRESSES": "127.0.0.1:\(proxy.port)"])
        let client = RPCClient(configuration: .init(addresses: [timeline.rpcAddress]), logger: Logger(label: "link-faults"))
        let (eve, fay) = (try await stack.makeUser("eve"), try await stack.makeUser("fay"))
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": fay.idValue], as: eve)
        let _: JSONValue = try await stack.call("tweets", "tweets.create", ["text": .string("over the wire")], as: fay)
        let clock = ContinuousClock()

        /// eve's home through the proxied instance, with a deadline of `deadline`: the error's
        /// reason (nil on success), and how long it took.
        func home(deadline: Duration = .seconds(2)) async -> (String?, Duration) {
            var reason: String?
            let took = await clock.measure {
                do {
                    let page = try await client.call(
                        "timeline.home", params: ["limit": JSONValue.int(20)],
                        meta: RequestMeta(token: eve.token, timeoutMs: deadline.milliseconds), as: JSONValue.self)
                    if page["items"]?.arrayValue?.isEmpty != false { reason = "empty page" }
                } catch let error as RPCError {
                    reason = error.reason ?? "\(error.code)"
                } catch {
                    reason = "\(error)"
                }
            }
            return (reason, took)
        }

        #expect(await home().0 == nil, "the link works")

        // A link slower than the caller's deadline: the call ends at the deadline.
        proxy.delay = .seconds(3)
        let (slowReason, slowTook) = await home(deadline: .milliseconds(800))
        #expect(slowReason == "timeout", "a slow link: \(slowReason ?? "success")")
        #expect(slowTook < .milliseconds(1500), "ended at the deadline, not after the link's delay: \(slowTook)")

        // A cut link: refused at once, well within the deadline.
        proxy.delay = .zero
        proxy.isCut = true
        let (cutReason, cutTook) = await home()
        #expect(cutReason == "unavailable", "a cut link: \(cutReason ?? "success")")
        #expect(cutTook < .seconds(1), "refused at once: \(cutTook)")

        // The link comes back: the instance uses it again without a restart.
        proxy.isCut = false
        #expect(await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { await home().0 == nil })
        await client.shutdown()
        timeline.kill()
    }
}
