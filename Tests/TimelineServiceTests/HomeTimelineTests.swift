import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import Redis
import Testing
import TestSupport
import TimelineService

/// Every test of the timeline service shares one stack; they run one at a time because some flush
/// Redis or kill the service, which the others must not see midway.
@Suite(.serialized)
struct TimelineServiceTests {}

extension TimelineServiceTests {
/// Home timelines on the Reed98 graph, checked against the database after each kind of change.
@Suite("home timelines on the Reed98 graph")
struct HomeTimelineTests {
    @Test("every user's home timeline equals the newest tweets of themselves and those they follow, built and then fanned out", .timeLimit(.minutes(3)))
    func everyUser() async throws {
        let stack = try await TimelineStack.shared()
        // First reads answer from the services and start the sets' builds (the stack's first tweets
        // predate them).
        let clock = ContinuousClock()
        let began = clock.now
        #expect(try await stack.homeMismatches(stack.users, limit: 30) == 0)
        try await stack.waitForHomeSets(stack.users)
        print("Reed98: \(stack.users.count) home timelines built and checked in \(clock.now - began)")

        // New tweets fan out into the sets that now exist, before anyone reads them.
        let posters = Array(stack.users.shuffled().prefix(300))
        let ids = try await stack.post(posters.map { ($0, "second words of \($0.username)") })
        try await stack.settle()
        let celebrities = Set(stack.nodesByDegree.prefix(3).map { stack.users[$0].id })
        let reader = stack.users[stack.nodesByDegree[10]]
        let following = Set(try await stack.followers(of: reader).map(\.id))  // Reed98 follows are mutual
        let stored = try await stack.storedHome(of: reader)
        for (poster, id) in zip(posters, ids) where following.contains(poster.id) || poster.id == reader.id {
            #expect(stored.contains(id) != celebrities.contains(poster.id), "tweet \(id) of \(poster.username) in the set of \(reader.username)")
        }
        #expect(try await stack.storedMismatches(stack.users) == 0)
        #expect(try await stack.homeMismatches(Array(stack.users.shuffled().prefix(150))) == 0)
    }

    @Test("after Redis is flushed, timelines are rebuilt on read and equal the database", .timeLimit(.minutes(2)))
    func afterFlush() async throws {
        let stack = try await TimelineStack.shared()
        try await stack.settle()
        _ = try await stack.stack.redis.send(["FLUSHDB"])
        let sample = Array(stack.users.shuffled().prefix(200)) + stack.nodesByDegree.prefix(5).map { stack.users[$0] }
        #expect(try await stack.homeMismatches(sample) == 0)
        // Concurrent first reads of one missing timeline agree (and rebuild it once).
        _ = try await stack.stack.redis.send(["DEL", RedisArgument("aviary:timeline:home:\(stack.users[0].id)")])
        let pages = try await withThrowingTaskGroup(of: [EntityID].self) { group in
            for _ in 0..<8 { group.addTask { try await stack.home(of: stack.users[0]).items.map(\.id) } }
            return try await group.reduce(into: [[EntityID]]()) { $0.append($1) }
        }
        #expect(Set(pages.map { $0.map(\.description).joined(separator: ",") }).count == 1)
    }

    @Test("a follow merges the followee's tweets in and an unfollow takes them out", .timeLimit(.minutes(1)))
    func followAndUnfollow() async throws {
        let stack = try await TimelineStack.shared()
        let follower = stack.users[stack.nodesByDegree.last!]
        let friends = Set(try await stack.followers(of: follower).map(\.id))
        let followee = stack.users.first { $0.id != follower.id && !friends.contains($0.id) && !stack.nodesByDegree.prefix(3).contains(stack.users.firstIndex(of: $0)!) }!
        try await stack.warmHomes([follower])  // the set exists, so the follow event has something to merge into
        let theirs = try await stack.post([(followee, "followee tweet one"), (followee, "followee tweet two")])
        try await stack.settle()
        #expect(try await stack.home(of: follower).items.allSatisfy { !theirs.contains($0.id.value) })

        let _: JSONValue = try await stack.stack.call("social-graph", "graph.follow", ["userId": followee.idValue], as: follower)
        try await stack.settle()
        #expect(try await stack.storedHome(of: follower).isSuperset(of: theirs))
        #expect(try await stack.homeMismatches([follower]) == 0)

        let _: JSONValue = try await stack.stack.call("social-graph", "graph.unfollow", ["userId": followee.idValue], as: follower)
        try await stack.settle()
        #expect(try await stack.storedHome(of: follower).isDisjoint(with: theirs))
        #expect(try await stack.homeMismatches([follower]) == 0)
    }

    @Test("follows handled together merge only into the home sets that exist, each edge as its last change left it", .timeLimit(.minutes(1)))
    func followsTogether() async throws {
        let stack = try await TimelineStack.shared()
        let reader = stack.users[stack.nodesByDegree[40]]
        let absent = stack.users[stack.nodesByDegree[41]]
        let friends = Set(try await stack.followers(of: reader).map(\.id) + stack.followers(of: absent).map(\.id))
        let followee = stack.users.first {
            ![reader.id, absent.id].contains($0.id) && !friends.contains($0.id) && !stack.nodesByDegree.prefix(3).contains(stack.users.firstIndex(of: $0)!)
        }!
        try await stack.warmHomes([reader])
        _ = try await stack.stack.redis.send(["DEL", RedisArgument("aviary:timeline:home:\(absent.id)")])
        let theirs = try await stack.post([(followee, "merged together one"), (followee, "merged together two")])
        try await stack.settle()

        // Sent back to back, the follows and the reader's unfollow and follow again reach one batch.
        for (method, user) in [("graph.follow", reader), ("graph.follow", absent), ("graph.unfollow", reader), ("graph.follow", reader)] {
            let _: JSONValue = try await stack.stack.call("social-graph", method, ["userId": followee.idValue], as: user)
        }
        try await stack.settle()
        #expect(try await stack.storedHome(of: reader).isSuperset(of: theirs))
        #expect(try await stack.stack.redis.send(["EXISTS", RedisArgument("aviary:timeline:home:\(absent.id)")]).int == 0)
        #expect(try await stack.homeMismatches([reader, absent]) == 0)
        for user in [reader, absent] {
            let _: JSONValue = try await stack.stack.call("social-graph", "graph.unfollow", ["userId": followee.idValue], as: user)
        }
        try await stack.settle()
        #expect(try await stack.storedHome(of: reader).isDisjoint(with: theirs))
    }

    @Test("Redis flushed under load: every call is answered, and afterwards every timeline and every built set equals the database", .timeLimit(.minutes(3)))
    func flushUnderLoad() async throws {
        let stack = try await TimelineStack.shared()
        try await stack.settle()
        try await stack.warmHomes(stack.users)
        // For 4 s, two loops post and eight read home timelines without pause; Redis is flushed after 1 s.
        let end = ContinuousClock.now + .seconds(4)
        let (calls, failures) = try await withThrowingTaskGroup(of: (calls: Int, failures: Int).self) { group in
            for loop in 0..<10 {
                group.addTask {
                    var (round, failures) = (0, 0)
                    while ContinuousClock.now < end {
                        let user = stack.users[(loop * 97 + round * 13) % stack.users.count]
                        do {
                            if loop < 2 {
                                try await stack.post([(user, "posted around the flush \(loop) \(round)")])
                            } else {
                                _ = try await stack.home(of: user, limit: 20)
                            }
                        } catch {
                            failures += 1
                            if failures <= 3 { Issue.record("a call around the flush failed: \(error)") }
                        }
                        round += 1
                    }
                    return (round, failures)
                }
            }
            try await Task.sleep(for: .seconds(1))
            _ = try await stack.stack.redis.send(["FLUSHDB"])
            return try await group.reduce(into: (0, 0)) { $0 = ($0.0 + $1.calls, $0.1 + $1.failures) }
        }
        print("flush under load: \(calls) calls in 4 s, \(failures) failed")
        #expect(failures == 0)
        try await stack.settle()
        #expect(try await stack.homeMismatches(stack.users) == 0)
        try await stack.waitForHomeSets(stack.users)
        #expect(try await stack.storedMismatches(stack.users) == 0)
    }

    @Test("fan-out trims a home timeline back to its capacity, newest kept, once it runs an eighth over, and marks it truncated; pages past it come from the database", .timeLimit(.minutes(2)))
    func trimToCapacity() async throws {
        let stack = try await TimelineStack.shared()
        let writer = stack.users[stack.nodesByDegree[stack.nodesByDegree.count - 2]]
        try await stack.warmHomes([writer])
        #expect(try await stack.storedTimeline(of: writer)?.state == .whole)
        let capacity = 800  // AVIARY_TIMELINE_CAPACITY's default
        let trimLength = capacity + capacity / 8
        let posted = try await stack.post((1...trimLength + 5).map { (writer, "to the brim \($0)") })
        try await stack.settle()
        let stored = try #require(try await stack.storedTimeline(of: writer))
        #expect(stored.state == .truncated)
        #expect((capacity...trimLength).contains(stored.ids.count))
        #expect(stored.ids == posted.sorted().suffix(stored.ids.count))
        #expect(try await stack.homeMismatches([writer]) == 0)
        // Paging on past the set's oldest entry goes on with older tweets, from the database.
        var paged: [Int64] = []
        var cursor: String?
        repeat {
            let page = try await stack.home(of: writer, limit: 100, cursor: cursor)
            paged += page.items.map(\.id.value)
            cursor = page.nextCursor
        } while cursor != nil && paged.count < capacity + 100
        #expect(paged == (try await stack.expectedHomes(of: [writer], limit: capacity + 100))[writer.id])
    }

    @Test("a read keeps the home set for the inactivity period, and writes its lease only once it runs low", .timeLimit(.minutes(1)))
    func leaseRenewal() async throws {
        let stack = try await TimelineStack.shared()
        let reader = stack.users[stack.nodesByDegree[30]]
        let key = RedisArgument("aviary:timeline:home:\(reader.id)")
        let period = 30 * 86_400  // AVIARY_TIMELINE_INACTIVE_DAYS's default
        func left() async throws -> Int { try await stack.stack.redis.send(["TTL", key]).int ?? -3 }
        try await stack.warmHomes([reader])
        #expect(try await left() >= period)
        // With more than the period left, a read leaves the lease alone: no write per read.
        _ = try await stack.stack.redis.send(["EXPIRE", key, RedisArgument(period + 1000)])
        _ = try await stack.home(of: reader)
        #expect(((period + 990)...(period + 1000)).contains(try await left()))
        // With less, the read renews it to the period and a tenth.
        _ = try await stack.stack.redis.send(["EXPIRE", key, 60])
        _ = try await stack.home(of: reader)
        #expect(try await left() > period + period / 10 - 60)
    }

    @Test("a deleted tweet leaves every timeline it reached", .timeLimit(.minutes(1)))
    func delete() async throws {
        let stack = try await TimelineStack.shared()
        let author = stack.users[stack.nodesByDegree[20]]
        let followers = try await stack.followers(of: author)
        try await stack.warmHomes(followers + [author])  // every set exists
        let id = try await stack.post([(author, "soon gone")])[0]
        try await stack.settle()
        #expect(try await stack.storedHome(of: followers[0]).contains(id))

        let _: JSONValue = try await stack.stack.call("tweets", "tweets.delete", ["tweetId": .string(String(id))], as: author)
        // The read path hides it at once, before the event is handled.
        #expect(try await stack.home(of: followers[1]).items.allSatisfy { $0.id.value != id })
        try await stack.settle()
        for user in followers + [author] {
            #expect(try await !stack.storedHome(of: user).contains(id), "\(user.username) still has the deleted tweet")
        }
        #expect(try await stack.homeMismatches(followers + [author]) == 0)
    }

    @Test("fan-out asks social-graph for an ordinary author's follower count once, not at every tweet", .timeLimit(.minutes(1)))
    func ordinaryAuthorCountedOnce() async throws {
        let stack = try await TimelineStack.shared()
        let author = stack.users[stack.nodesByDegree[stack.nodesByDegree.count / 2]]
        let followers = try await stack.followers(of: author)
        try await stack.warmHomes(followers)
        let (ids, calls) = try await postThreeApart(as: author, "ordinary words", counting: "graph.statsMany", stack)
        #expect(calls <= 1)
        try await expectHomes(of: followers, toHold: ids, stack)
    }

    @Test("fan-out reads an author's followers once while they stay the same, and again once a follow or a newer version says they changed", .timeLimit(.minutes(1)))
    func followerListReadOnce() async throws {
        let stack = try await TimelineStack.shared()
        let author = stack.users[stack.nodesByDegree[stack.nodesByDegree.count / 3]]
        var followers = try await stack.followers(of: author)
        try await stack.warmHomes(followers)
        let listed = try await postThreeApart(as: author, "listed words", counting: "graph.followerIds", stack)
        #expect(listed.calls <= 1)
        try await expectHomes(of: followers, toHold: listed.ids, stack)

        // A follow handled since changes the list: the next tweet reaches the newcomer too.
        let newcomer = stack.users.first { user in
            user.id != author.id && !followers.contains(user) && !stack.nodesByDegree.prefix(3).contains(stack.users.firstIndex(of: user)!)
        }!
        try await stack.warmHomes([newcomer])
        let _: JSONValue = try await stack.stack.call("social-graph", "graph.follow", ["userId": author.idValue], as: newcomer)
        try await stack.settle()
        followers.append(newcomer)
        var ids = try await stack.post([(author, "listed words after a follow")])
        try await stack.settle()
        try await expectHomes(of: followers, toHold: ids, stack)

        // A version newer than the list's (a change another instance handled, whose announcement has
        // not arrived) makes fan-out read the list again rather than use the one it holds.
        let beforeBump = try graphCalls("graph.followerIds", stack)
        _ = try await stack.stack.redis.send(["INCR", RedisArgument("aviary:timeline:followers-version:\(author.id)")])
        ids = try await stack.post([(author, "listed words after a bump")])
        try await stack.settle()
        #expect(try graphCalls("graph.followerIds", stack) - beforeBump == 1)
        try await expectHomes(of: followers, toHold: ids, stack)
        let _: JSONValue = try await stack.stack.call("social-graph", "graph.unfollow", ["userId": author.idValue], as: newcomer)
        try await stack.settle()
        #expect(try await stack.homeMismatches([newcomer]) == 0)
    }

    /// Posts three tweets as `author`, one at a time so that each is fanned out in a batch of its
    /// own; returns their ids and how many calls of `method` social-graph served meanwhile.
    private func postThreeApart(as author: StackUser, _ text: String, counting method: String, _ stack: TimelineStack)
        async throws -> (ids: [Int64], calls: Int)
    {
        let before = try graphCalls(method, stack)
        var ids: [Int64] = []
        for round in 1...3 {
            ids += try await stack.post([(author, "\(text) \(round)")])
            try await stack.settle()
        }
        return (ids, try graphCalls(method, stack) - before)
    }

    /// Checks that the home set of each of `users` holds every one of `ids`.
    private func expectHomes(
        of users: [StackUser], toHold ids: [Int64], _ stack: TimelineStack, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        for user in users {
            #expect(
                try await stack.storedHome(of: user).isSuperset(of: ids), "\(user.username) lacks a tweet",
                sourceLocation: sourceLocation)
        }
    }

    /// The calls of `method` social-graph has served, from its metrics.
    private func graphCalls(_ method: String, _ stack: TimelineStack) throws -> Int {
        let metrics = try AdminHTTP.get("/metrics", port: stack.stack.process("social-graph").adminPort).body
        let line = metrics.split(separator: "\n").first {
            $0.hasPrefix("rpc_server_requests_total") && $0.contains(#"rpc_method="\#(method)""#)
        }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) } ?? 0
    }

    @Test("a celebrity's tweets are not fanned out but merged into their followers' timelines at read time", .timeLimit(.minutes(1)))
    func celebrity() async throws {
        let stack = try await TimelineStack.shared()
        let celebrity = stack.users[stack.nodesByDegree[0]]
        let followers = try await stack.followers(of: celebrity)
        #expect(followers.count > TimelineStack.celebrityFollowers)
        try await stack.warmHomes(followers)
        let ids = try await stack.post([(celebrity, "famous words one"), (celebrity, "famous words two")])
        try await stack.settle()
        for follower in followers.prefix(20) {
            #expect(try await stack.storedHome(of: follower).isDisjoint(with: ids))
        }
        #expect(try await stack.storedHome(of: celebrity).isSuperset(of: ids))
        #expect(try await stack.homeMismatches(followers + [celebrity]) == 0)
        // Paging through a merged timeline gives the same sequence as one long page.
        let reader = followers[0]
        let whole = try await stack.home(of: reader, limit: 100).items.map(\.id)
        var paged: [EntityID] = []
        var cursor: String?
        repeat {
            let page = try await stack.home(of: reader, limit: 7, cursor: cursor)
            paged += page.items.map(\.id)
            cursor = page.nextCursor
        } while cursor != nil && paged.count < whole.count
        #expect(Array(paged.prefix(whole.count)) == whole)
    }

    @Test("after the timeline service is killed with SIGKILL in the middle of fan-out and restarted, nothing is missing", .timeLimit(.minutes(2)))
    func killedDuringFanOut() async throws {
        let stack = try await TimelineStack.shared()
        try await stack.warmHomes(stack.users)  // every set exists, so fan-out reaches them all
        let busiest = stack.nodesByDegree[3..<60].map { stack.users[$0] }
        let posts = (0..<600).map { index in (busiest[index % busiest.count], "busy words \(index)") }

        let posting = Task { try await stack.post(posts) }
        // Killed while fan-out has work in hand (a fixed delay sometimes let it finish first).
        _ = await eventually(timeout: .seconds(10), interval: .milliseconds(10)) { ((try? await stack.backlog(topic: "tweets")) ?? 0) > 20 }
        stack.stack.process("timeline").kill()
        _ = await stack.stack.process("timeline").waitForExit(timeout: .seconds(10))
        let interrupted = try await stack.backlog(topic: "tweets")
        _ = try await posting.value
        try await stack.stack.restart("timeline")
        #expect(interrupted > 0, "the kill came after the fan-out finished")
        try await stack.waitForTimeline()

        try await stack.settle(timeout: .seconds(40))
        #expect(try await stack.storedMismatches(stack.users) == 0)
        #expect(try await stack.homeMismatches(busiest + stack.users.shuffled().prefix(100)) == 0)
    }
}
}
