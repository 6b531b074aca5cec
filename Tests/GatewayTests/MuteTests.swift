import AviaryJSON
import Foundation
import Testing
import TestSupport

/// Mutes end to end through the edge: the muted user's tweets leave the muter's home timeline and
/// their actions stop notifying, the muted user is told nothing, and the tweets come back when the
/// mute is lifted or runs out.
@Suite("Mutes", .serialized)
struct MuteTests {
    @Test("a mute hides tweets, others' reposts of them and notifications until lifted or over; the muted user sees no change")
    func muteAndLift() async throws {
        let edge = try await GatewayStack.shared()
        let (ana, ben, cat) = (try await edge.register("ana"), try await edge.register("ben"), try await edge.register("cat"))
        func call(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser) async throws -> JSONValue {
            let answer = try await EdgeHTTP.rpc(edge.url, method, params, token: user.token)
            return try #require(answer["result"], "\(method) answered \(answer)")
        }
        func ids(_ page: JSONValue) -> [String] { page["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [] }
        func home(_ user: EdgeUser) async throws -> [String] { ids(try await call("timeline.home", ["limit": 100], as: user)) }
        func post(_ text: String, as user: EdgeUser) async throws -> String {
            try #require(try await call("tweets.create", ["text": .string(text)], as: user)["id"]?.stringValue)
        }

        _ = try await call("graph.follow", ["userId": .string(ben.id)], as: ana)
        _ = try await call("graph.follow", ["userId": .string(cat.id)], as: ana)
        _ = try await call("graph.follow", ["userId": .string(ben.id)], as: cat)
        let first = try await post("ben, before", as: ben)
        #expect(await eventually { (try? await home(ana).contains(first)) == true })

        #expect(try await call("graph.mute", ["userId": .string(ben.id)], as: ana)["muting"] == true)
        #expect(await eventually { (try? await home(ana).contains(first)) == false })
        // New tweets reach cat, never ana; the follow itself stays, and ben sees nothing change.
        let second = try await post("ben, while muted", as: ben)
        #expect(await eventually { (try? await home(cat).contains(second)) == true })
        #expect(try await !home(ana).contains(second))
        // Nor as the repost of someone ana follows: cat reposts it, then posts; once cat's post has
        // reached ana's home, so has the repost, which is not shown.
        _ = try await call("tweets.repost", ["tweetId": .string(second)], as: cat)
        let after = try await post("cat, after reposting", as: cat)
        #expect(await eventually { (try? await home(ana).contains(after)) == true })
        #expect(try await !home(ana).contains(second))
        let reposts = try await call("timeline.user", ["userId": .string(cat.id)], as: ben)["items"]?.arrayValue ?? []
        #expect(reposts.contains { $0["id"]?.stringValue == second && $0["repostedBy"]?["id"]?.stringValue == cat.id })
        let seen = try await call("graph.relationship", ["userId": .string(ana.id)], as: ben)
        #expect(seen["followsYou"] == true && seen["muting"] == false)  // a mute is the muter's alone to see
        let own = try await call("graph.relationship", ["userId": .string(ben.id)], as: ana)
        #expect(own["muting"] == true && own["mutingNotifications"] == true)
        #expect(try await ids(call("graph.mutes", as: ana)) == [ben.id])
        #expect(try await ids(call("graph.mutes", as: ben)).isEmpty)
        // ben's mention notifies ana no more; cat's does.
        _ = try await post("@\(ana.username) from ben", as: ben)
        _ = try await post("@\(ana.username) from cat", as: cat)
        func mentioners() async throws -> [String] {
            try await call("notifications.list", as: ana)["items"]?.arrayValue?.filter { $0["type"] == "mention" }
                .compactMap { $0["actor"]?["id"]?.stringValue } ?? []
        }
        #expect(await eventually { (try? await mentioners()) == [cat.id] })
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await mentioners() == [cat.id])

        // Lifted: both tweets are back.
        #expect(try await call("graph.unmute", ["userId": .string(ben.id)], as: ana)["muting"] == false)
        #expect(await eventually { (try? await Set(home(ana)).isSuperset(of: [first, second])) == true })

        // A mute of a second runs out by itself (swept every 5 s); with notifications false,
        // cat's mention still notifies meanwhile.
        let cats = try await post("cat, before", as: cat)
        #expect(await eventually { (try? await home(ana).contains(cats)) == true })
        _ = try await call("graph.mute", ["userId": .string(cat.id), "durationSeconds": 1, "notifications": false], as: ana)
        #expect(await eventually { (try? await home(ana).contains(cats)) == false })
        #expect(await eventually(timeout: .seconds(20)) { (try? await home(ana).contains(cats)) == true })

        let refused = try await EdgeHTTP.rpc(edge.url, "graph.mute", ["userId": .string(cat.id), "durationSeconds": 0], token: ana.token)
        #expect(refused["error"]?["data"]?["field"]?.stringValue == "durationSeconds")
    }
}
