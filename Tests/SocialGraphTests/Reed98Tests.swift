import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import TestSupport
import Testing

extension Reed98 {
    /// The suggestions for `node`: friends of friends, not friends, not the node, by mutual
    /// friends then by id (node order is id order here).
    func suggestions(for node: Int, limit: Int) -> [Int] {
        let friends = neighbours
        var mutual: [Int: Int] = [:]
        for friend in friends[node] {
            for candidate in friends[friend] where candidate != node && !friends[node].contains(candidate) {
                mutual[candidate, default: 0] += 1
            }
        }
        return mutual.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(limit).map(\.key)
    }
}

@Suite("the Reed98 graph")
struct Reed98Tests {
    @Test("loading Reed98 both ways through graph.follow gives exact counts and answering suggestions", .timeLimit(.minutes(8)))
    func reed98() async throws {
        let stack = try await GraphStack.shared()
        let graph = try Reed98.load()
        #expect(graph.nodeCount == 962)
        #expect(graph.edges.count == 18_812)
        let users = try await stack.makeUsers(graph.nodeCount, "reed")

        let directed = graph.edges.flatMap { [($0.0, $0.1), ($0.1, $0.0)] }.shuffled()
        let next = SharedCounter()
        let failures = SharedCounter()
        let clock = ContinuousClock()
        let loading = try await clock.measure {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<64 {
                    group.addTask {
                        while true {
                            let index = next.next()
                            guard index < directed.count else { return }
                            let (from, to) = directed[index]
                            do {
                                try await stack.follow(users[from], users[to])
                            } catch {
                                if failures.next() < 5 { Issue.record("follow failed: \(error)") }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        #expect(failures.current == 0)
        let seconds = Double(loading.components.seconds) + Double(loading.components.attoseconds) / 1e18
        print("Reed98: \(directed.count) follows in \(String(format: "%.1f", seconds)) s, \(Int(Double(directed.count) / seconds))/s")

        let friends = graph.neighbours
        let stats = try await stack.callInternal("graph.statsMany", ["ids": .ids(users.map(\.id))], decoding: [UserStatsResult].self)
        #expect(stats.count == graph.nodeCount)
        var wrong = 0
        for (node, stat) in stats.enumerated() where stat.followers != friends[node].count || stat.following != friends[node].count {
            wrong += 1
            if wrong <= 5 { Issue.record("node \(node): \(stat), expected \(friends[node].count) both ways") }
        }
        #expect(wrong == 0)
        #expect(try await countMismatches(stack) == 0)

        let busiest = friends.indices.max { friends[$0].count < friends[$1].count }!
        let followerIDs = try await stack.callInternal(
            "graph.followerIds", ["userId": .id(users[busiest].id)], decoding: IDPage.self)
        #expect(Set(followerIDs.items) == Set(friends[busiest].map { users[$0].id.description }))

        for node in [busiest, 0, 500, friends.indices.min { friends[$0].count < friends[$1].count }!] {
            let started = clock.now
            let suggested = try await stack.call("graph.suggestions", ["limit": 20], as: users[node], decoding: [User].self)
            let elapsed = clock.now - started
            print("Reed98: suggestions for node \(node) (\(friends[node].count) friends) in \(elapsed)")
            #expect(suggested.map(\.id) == graph.suggestions(for: node, limit: 20).map { users[$0].id })
            #expect(suggested.allSatisfy { !$0.isFollowed && $0.stats.followers > 0 })
        }
    }
}
