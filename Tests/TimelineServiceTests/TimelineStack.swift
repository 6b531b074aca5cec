import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Postgres
import RPC
import Redis
import Synchronization
import TestSupport
import Testing
import TimelineService

/// A tweet as the tests look at it.
struct TweetRef: Decodable, Sendable, Hashable {
    struct Author: Decodable, Sendable, Hashable {
        var id: EntityID
    }

    var id: EntityID
    var author: Author
    var text: String?
}

/// A page of `timeline.home` or `timeline.user`.
struct TweetPage: Decodable, Sendable {
    var items: [TweetRef]
    var nextCursor: String?
}

/// auth, social-graph, tweets and timeline on Redis database 9, with the Reed98 graph loaded
/// (962 users following their friends both ways) and one tweet per user; started once per test process.
final class TimelineStack: Sendable {
    /// Authors with more followers than this are celebrities here: 3 of Reed98's users.
    static let celebrityFollowers = 200

    let stack: ServiceStack
    let graph: Reed98
    /// Reed98 node `i` is `users[i]`.
    let users: [StackUser]

    private init(stack: ServiceStack, graph: Reed98, users: [StackUser]) {
        self.stack = stack
        self.graph = graph
        self.users = users
    }

    private static let started = Task { try await TimelineStack.start() }

    static func shared() async throws -> TimelineStack {
        try await started.value
    }

    private static func start() async throws -> TimelineStack {
        let clock = ContinuousClock()
        let began = clock.now
        let stack = try await ServiceStack.start(
            ["auth", "social-graph", "tweets", "timeline"], redisDatabase: 9,
            environment: ["AVIARY_TIMELINE_CELEBRITY_FOLLOWERS": String(celebrityFollowers)])
        let graph = try Reed98.load()
        let users = try await stack.makeUsers(graph.nodeCount, "reed")
        let registered = clock.now
        let timeline = TimelineStack(stack: stack, graph: graph, users: users)
        try await timeline.loadFollows()
        try await timeline.post(users.map { ($0, "first words of \($0.username) #reed") })
        try await timeline.settle()
        print("TimelineStack: started in \(registered - began), Reed98 follows and \(users.count) tweets in \(clock.now - registered)")
        return timeline
    }

    /// Writes the follows and counts rows straight into the graph's tables: they predate every
    /// timeline, so no follow event is missed, and it takes a second where 37,624 `graph.follow`
    /// calls would take most of the suite's time.
    private func loadFollows() async throws {
        let directed = graph.edges.flatMap { [($0.0, $0.1), ($0.1, $0.0)] }
        try await stack.database.execute(
            """
            INSERT INTO social_graph.follows (follower_id, followee_id, created_at)
            SELECT follower, followee, now() FROM unnest($1::bigint[], $2::bigint[]) AS edge(follower, followee)
            """, [directed.map { users[$0.0].id.value }, directed.map { users[$0.1].id.value }])
        let degrees = graph.degrees
        try await stack.database.execute(
            """
            INSERT INTO social_graph.counts (user_id, followers, following)
            SELECT * FROM unnest($1::bigint[], $2::bigint[], $2::bigint[])
            """, [users.map(\.id.value), degrees.map { Int64($0) }])
        // What the graph's outbox relay announces for follows: social-graph drops the records it read
        // when the users registered, a moment later.
        let channel = "aviary:graph:forget-follows:\(stack.redis.configuration.database)"
        _ = try await stack.redis.send(["PUBLISH", RedisArgument(channel), RedisArgument(users.map(\.id.description).joined(separator: " "))])
        let busiest = users[nodesByDegree[0]]
        struct Stats: Decodable { var followers: Int64 }
        let heard = try await eventually {
            try await stack.callInternal("social-graph", "graph.statsMany", ["ids": .ids([busiest.id])], decoding: [Stats].self)[0].followers > 0
        }
        guard heard else { throw TestSupportError("social-graph did not hear of the follows written for it within 10 s") }
    }

    private struct Created: Decodable {
        var id: EntityID
    }

    /// Posts each text as its user, 32 at a time; returns the new tweets' ids in the same order.
    @discardableResult
    func post(_ posts: [(StackUser, String)]) async throws -> [Int64] {
        let ids = Locked([Int64](repeating: 0, count: posts.count))
        try await concurrently(posts.indices, width: 32) { index in
            let (user, text) = posts[index]
            let created = try await self.stack.call(
                "tweets", "tweets.create", ["text": .string(text)], as: user, decoding: Created.self)
            ids.withLock { $0[index] = created.id.value }
        }
        return ids.withLock { $0 }
    }

    /// Waits until every event reached the timeline service and it acknowledged them: both
    /// outboxes empty, and the `timeline` group of each stream at its end with nothing pending.
    func settle(timeout: Duration = .seconds(30)) async throws {
        guard try await eventually(timeout: timeout, { try await isSettled() }) else {
            throw TestFailure("events were not consumed within \(timeout)")
        }
    }

    private func isSettled() async throws -> Bool {
        let rows = try await stack.database.query(
            "SELECT (SELECT count(*) FROM tweets.outbox) + (SELECT count(*) FROM social_graph.outbox)")
        guard try rows[0].decode(Int64.self, at: 0) == 0 else { return false }
        for topic in ["tweets", "graph"] {
            guard try await backlog(topic: topic) == 0 else { return false }
        }
        return true
    }

    /// Events of `topic` the timeline group has not acknowledged: pending, or not yet delivered.
    func backlog(topic: String) async throws -> Int {
        let key = "aviary:events:\(topic)"
        let stream: RESPValue
        do {
            stream = try await stack.redis.send(["XINFO", "STREAM", RedisArgument(key)])
        } catch let error as RedisError where error.serverMessage?.contains("no such key") == true {
            return 0
        }
        let last = Self.field("last-generated-id", in: stream)?.string ?? "0-0"
        let groups = try await stack.redis.send(["XINFO", "GROUPS", RedisArgument(key)])
        guard let group = groups.array?.first(where: { Self.field("name", in: $0)?.string == "timeline" }) else {
            return last == "0-0" ? 0 : 1
        }
        let pending = Self.field("pending", in: group)?.int ?? 0
        let delivered = Self.field("last-delivered-id", in: group)?.string ?? "0-0"
        return pending + (delivered == last ? 0 : Self.field("lag", in: group)?.int ?? 1)
    }

    private static func field(_ name: String, in reply: RESPValue) -> RESPValue? {
        guard let flat = reply.array else { return nil }
        return stride(from: 0, to: flat.count - 1, by: 2).first { flat[$0].string == name }.map { flat[$0 + 1] }
    }

    /// Each of `users`' newest `limit` live tweets of themselves and everyone they follow, straight
    /// from the graph's and the tweets' tables.
    func expectedHomes(of users: [StackUser], limit: Int, leavingOut skipped: Set<Int64> = []) async throws -> [EntityID: [Int64]] {
        let follows = try await stack.database.query(
            "SELECT follower_id, followee_id FROM social_graph.follows WHERE follower_id = ANY($1)", [users.map(\.id.value)])
        var followees: [Int64: [Int64]] = [:]
        for row in follows {
            followees[try row.decode(Int64.self, at: 0), default: []].append(try row.decode(Int64.self, at: 1))
        }
        let tweets = try await stack.database.query(
            "SELECT id, author_id FROM tweets.tweets WHERE deleted_at IS NULL ORDER BY id DESC")
        var byAuthor: [Int64: [Int64]] = [:]
        for row in tweets {
            byAuthor[try row.decode(Int64.self, at: 1), default: []].append(try row.decode(Int64.self, at: 0))
        }
        var expected: [EntityID: [Int64]] = [:]
        for user in users {
            let authors = [user.id.value] + (followees[user.id.value] ?? []).filter { !skipped.contains($0) }
            expected[user.id] = Array(authors.flatMap { byAuthor[$0] ?? [] }.sorted(by: >).prefix(limit))
        }
        return expected
    }

    /// The first page of `user`'s home timeline.
    func home(of user: StackUser, limit: Int = 100, cursor: String? = nil) async throws -> TweetPage {
        var params: [String: JSONValue] = ["limit": .int(Int64(limit))]
        if let cursor { params["cursor"] = .string(cursor) }
        return try await stack.call("timeline", "timeline.home", params, as: user, decoding: TweetPage.self)
    }

    /// Compares the first page of each of `users`' home timelines with the database; returns how
    /// many differ (recording the first few as issues).
    func homeMismatches(_ users: [StackUser], limit: Int = 40) async throws -> Int {
        let expected = try await expectedHomes(of: users, limit: limit)
        let wrong = Atomic(0)
        try await concurrently(users.indices, width: 16) { index in
            let user = users[index]
            let page = try await self.home(of: user, limit: limit)
            let actual = page.items.map(\.id.value)
            if actual != expected[user.id] {
                if wrong.add(1, ordering: .relaxed).newValue <= 3 {
                    let missing = Set(expected[user.id] ?? []).subtracting(actual)
                    let extra = Set(actual).subtracting(expected[user.id] ?? [])
                    Issue.record(
                        "home of \(user.username): \(actual.count) tweets, expected \(expected[user.id]?.count ?? 0); missing \(missing.sorted().prefix(5)), extra \(extra.sorted().prefix(5))")
                }
            }
        }
        return wrong.load(ordering: .relaxed)
    }

    /// Reads each of `users`' home timeline once (one tweet) and waits until every set exists.
    func warmHomes(_ users: [StackUser]) async throws {
        try await concurrently(users, width: 16) { user in _ = try await self.home(of: user, limit: 1) }
        try await waitForHomeSets(users)
    }

    /// Waits until the timeline service answers on every connection of the stack's client (after a
    /// restart each call through a connection that died fails once with `unavailable`).
    func waitForTimeline() async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        var answered = 0
        while answered < 8 {
            do {
                _ = try await home(of: users[0], limit: 1)
                answered += 1
            } catch let error as RPCError where error.reason == "unavailable" && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// Compares each of `users`' home sets in Redis (the newest `limit` ids) with the database,
    /// without the service: the set holds the tweets of the user and of those they follow who
    /// are not celebrities. Returns how many differ.
    func storedMismatches(_ users: [StackUser], limit: Int = 100) async throws -> Int {
        let celebrities = Set(nodesByDegree.prefix(3).map { self.users[$0].id.value })
        let expected = try await expectedHomes(of: users, limit: 100_000, leavingOut: celebrities)
        var wrong = 0
        for user in users {
            let stored = try await storedHome(of: user).sorted(by: >).prefix(limit)
            let wanted = expected[user.id, default: []].prefix(limit)
            if Array(stored) != Array(wanted) {
                wrong += 1
                if wrong <= 3 {
                    Issue.record("stored home of \(user.username): missing \(Set(wanted).subtracting(stored).sorted().prefix(5)), extra \(Set(stored).subtracting(wanted).sorted().prefix(5))")
                }
            }
        }
        return wrong
    }

    /// Waits until the home sets of `users` are built: a read of a missing set starts its build in the
    /// background and does not wait for it.
    func waitForHomeSets(_ users: [StackUser], timeout: Duration = .seconds(60)) async throws {
        let keys = users.map { "aviary:timeline:home:\($0.id)" }
        let built = try await eventually(timeout: timeout, interval: .milliseconds(50)) {
            let states = try await stack.redis.pipeline(keys.map { ["GETRANGE", RedisArgument($0), 0, 0] })
            let built: Set<PackedTimeline.State> = [.whole, .truncated]
            return states.allSatisfy { $0.bytes?.first.flatMap(PackedTimeline.State.init(rawValue:)).map(built.contains) == true }
        }
        #expect(built, "home sets not built within \(timeout)")
    }

    /// The members of `user`'s home set in Redis (tweet ids), without reading through the service.
    func storedHome(of user: StackUser) async throws -> Set<Int64> {
        try await Set(storedTimeline(of: user)?.ids ?? [])
    }

    /// `user`'s home timeline as Redis holds it, nil when it has none.
    func storedTimeline(of user: StackUser) async throws -> PackedTimeline? {
        try await stack.redis.get("aviary:timeline:home:\(user.id)").flatMap(PackedTimeline.init)
    }

    /// Node indexes by degree, highest first.
    var nodesByDegree: [Int] {
        let degrees = graph.degrees
        return degrees.indices.sorted { (degrees[$0], $1) > (degrees[$1], $0) }
    }

    /// The users following `user` (Reed98 friends, plus whatever tests changed, from the database).
    func followers(of user: StackUser) async throws -> [StackUser] {
        let rows = try await stack.database.query(
            "SELECT follower_id FROM social_graph.follows WHERE followee_id = $1", [user.id.value])
        let ids = Set(try rows.map { try $0.decode(Int64.self, at: 0) })
        return users.filter { ids.contains($0.id.value) }
    }
}

/// Runs `body` for each element, `width` at a time.
func concurrently<C: Collection & Sendable>(
    _ elements: C, width: Int, _ body: @escaping @Sendable (C.Element) async throws -> Void
) async throws where C.Element: Sendable {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var iterator = elements.makeIterator()
        var running = 0
        while running < width, let element = iterator.next() {
            group.addTask { try await body(element) }
            running += 1
        }
        while try await group.next() != nil {
            if let element = iterator.next() { group.addTask { try await body(element) } }
        }
    }
}

/// A failure of the test set-up, with its reason.
struct TestFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
