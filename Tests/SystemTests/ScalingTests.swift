import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Postgres
import RPC
import Synchronization
import TestSupport
import Testing

/// Per-service scaling, proven with real processes: two instances of every service and three of
/// timeline, load through all of them, one instance of each killed with `kill -9` mid-load. Only
/// calls in flight at the kill may fail, no acknowledged write is lost, and the restarted instances
/// take load again.
@Suite(.serialized) struct ScalingTests {
    static let workers = 8

    /// What the load acknowledged and what failed.
    final class Ledger: Sendable {
        struct State {
            var tweets: [String] = []
            var follows: [(StackUser, StackUser)] = []
            var messages: [(conversation: String, message: String)] = []
            var calls = 0
            var failures: [String] = []
        }
        let state = Locked(State())
        let running = Atomic<Bool>(true)
    }

    /// How many node id leases are live in the stack's database, and how many distinct ids they hold.
    static func liveNodeLeases(_ stack: ServiceStack) async throws -> [Int] {
        let rows = try await stack.database.query(
            "SELECT count(*), count(DISTINCT node_id) FROM aviary_shared.node_leases WHERE expires_at > now()")
        return [try rows[0].decode(Int.self, at: 0), try rows[0].decode(Int.self, at: 1)]
    }

    @Test func killingOneInstanceOfEachServiceLosesNoAcknowledgedWrite() async throws {
        let stack = try await ServiceStack.start(
            ServiceStack.allServices, redisDatabase: 14, instances: Dictionary(uniqueKeysWithValues: ServiceStack.allServices.map { ($0, $0 == "timeline" ? 3 : 2) }))
        // No process was given AVIARY_NODE_ID: each of the 15 leased its own.
        #expect(try await Self.liveNodeLeases(stack) == [15, 15], "live leases and distinct node ids")
        let users = try await stack.makeUsers(Self.workers * 2, "scale")
        var conversations: [String] = []
        for worker in 0..<Self.workers {
            let conversation: JSONValue = try await stack.call(
                "messaging", "messaging.openDirect", ["userId": users[worker + Self.workers].idValue], as: users[worker])
            conversations.append(try #require(conversation["id"]?.stringValue))
        }
        let conversationIDs = conversations
        let ledger = Ledger()

        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<Self.workers {
                    group.addTask {
                        var step = 0
                        while ledger.running.load(ordering: .relaxed) {
                            await Self.step(
                                step, worker: worker, users: users, conversation: conversationIDs[worker], stack: stack,
                                ledger: ledger)
                            step += 1
                        }
                    }
                }
            }
        }

        try await Task.sleep(for: .seconds(3))
        let before = ledger.state.withLock { $0.calls }
        // One instance of each service dies at once, mid-load.
        await withTaskGroup(of: Void.self) { group in
            for service in ServiceStack.allServices { group.addTask { try? await stack.stop(service, instance: 1) } }
        }
        try await Task.sleep(for: .seconds(3))
        let failuresWhileDown = ledger.state.withLock { $0.failures }
        for service in ServiceStack.allServices { try await stack.start(service, instance: 1) }
        try await Task.sleep(for: .seconds(3))
        ledger.running.store(false, ordering: .relaxed)
        await load.value

        // The 7 restarted processes leased new ids; those of the 7 killed stay leased until they expire.
        #expect(try await Self.liveNodeLeases(stack) == [22, 22], "live leases and distinct node ids after the restart")
        let state = ledger.state.withLock { $0 }
        print(
            "scaling: \(state.calls) calls, \(state.failures.count) failed at the kill, \(state.tweets.count) tweets, "
                + "\(state.follows.count) follows, \(state.messages.count) messages acknowledged")
        #expect(state.calls > before, "the load went on while instances were down")
        // Each worker had at most one call in flight when the instances died.
        #expect(failuresWhileDown.count <= Self.workers, "failures: \(failuresWhileDown)")
        #expect(state.failures.count == failuresWhileDown.count, "failures after the restart: \(state.failures)")

        // Every acknowledged write is there.
        for chunk in stride(from: 0, to: state.tweets.count, by: 100) {
            let ids = Array(state.tweets[chunk..<min(chunk + 100, state.tweets.count)])
            let found: [JSONValue] = try await stack.callInternal(
                "tweets", "tweets.getMany", ["ids": .array(ids.map(JSONValue.string))])
            #expect(found.compactMap { $0["id"]?.stringValue } == ids)
        }
        for (follower, followee) in state.follows {
            let relation: JSONValue = try await stack.call(
                "social-graph", "graph.relationship", ["userId": followee.idValue], as: follower)
            #expect(relation["isFollowed"] == true)
        }
        for (worker, conversation) in conversations.enumerated() {
            let sent = Set(state.messages.filter { $0.conversation == conversation }.map(\.message))
            var seen: Set<String> = []
            var cursor: JSONValue = .null
            repeat {
                let page: JSONValue = try await stack.call(
                    "messaging", "messaging.history", ["conversationId": .string(conversation), "limit": 100, "cursor": cursor],
                    as: users[worker])
                for message in page["items"]?.arrayValue ?? [] { seen.insert(message["id"]?.stringValue ?? "") }
                cursor = page["nextCursor"] ?? .null
            } while cursor != .null
            #expect(sent.isSubset(of: seen), "messages lost: \(sent.subtracting(seen))")
        }

        // The restarted instances take calls again.
        for service in ServiceStack.allServices {
            let metrics = try AdminHTTP.get("/metrics", port: stack.process(service, instance: 1).adminPort).body
            let served = metrics.split(separator: "\n").filter {
                $0.hasPrefix("rpc_server_requests_total") && !$0.contains("system.health")
            }
            #expect(!served.isEmpty, "\(service): the restarted instance served no calls")
        }
    }

    /// One call of the mix: writes (tweets, follows, messages) are recorded once acknowledged; reads
    /// are idempotent and may be retried on another instance.
    static func step(
        _ step: Int, worker: Int, users: [StackUser], conversation: String, stack: ServiceStack, ledger: Ledger
    ) async {
        let user = users[worker]
        let meta = RequestMeta(token: user.token)
        do {
            switch step % 6 {
            case 0:
                let tweet = try await stack.client("tweets").call(
                    "tweets.create", params: ["text": JSONValue.string("load \(worker) \(step)"), "idempotencyKey": .string(UUID().uuidString)],
                    meta: meta, as: JSONValue.self)
                let id = tweet["id"]?.stringValue ?? ""
                ledger.state.withLock { $0.tweets.append(id) }
            case 1:
                _ = try await stack.client("timeline").call(
                    "timeline.home", params: ["limit": JSONValue.int(10)], meta: meta, idempotent: true, as: JSONValue.self)
            case 2:
                let followee = users[(worker + 1 + step / 6) % users.count]
                guard followee != user else { return }
                _ = try await stack.client("social-graph").call(
                    "graph.follow", params: ["userId": followee.idValue], meta: meta, as: JSONValue.self)
                ledger.state.withLock { $0.follows.append((user, followee)) }
            case 3:
                let message = try await stack.client("messaging").call(
                    "messaging.send",
                    params: ["conversationId": JSONValue.string(conversation), "text": .string("hello \(step)"), "clientMessageId": .string(UUID().uuidString)],
                    meta: meta, as: JSONValue.self)
                let id = message["id"]?.stringValue ?? ""
                ledger.state.withLock { $0.messages.append((conversation, id)) }
            case 4:
                _ = try await stack.client("auth").call(
                    "auth.getUser", params: ["userId": users[(worker + step) % users.count].idValue], meta: meta, idempotent: true,
                    as: JSONValue.self)
            default:
                _ = try await stack.client("notifications").call(
                    "notifications.unreadCount", meta: meta, idempotent: true, as: JSONValue.self)
            }
            ledger.state.withLock { $0.calls += 1 }
        } catch {
            ledger.state.withLock { $0.failures.append("step \(step % 6): \(error)") }
        }
    }
}
