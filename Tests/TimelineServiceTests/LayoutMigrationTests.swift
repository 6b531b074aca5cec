import AviaryAPI
import AviaryJSON
import Foundation
import Redis
import Testing
import TestSupport
import TimelineService

extension TimelineServiceTests {
/// A stack upgraded from the layout before ``PackedTimeline``: timelines that are sorted sets whose
/// members are 19-digit ids above a sentinel (`…0` whole, `…1` truncated, `…2` building), as the
/// service wrote them until issue 44.
@Suite("timelines of the sorted-set layout before")
struct LayoutMigrationTests {
    @Test("an old home set is kept current by fan-out and deletes, then converted by its first read in Redis alone, lifetime kept", .timeLimit(.minutes(1)))
    func oldHomeSet() async throws {
        let stack = try await TimelineStack.shared()
        let reader = stack.users[stack.nodesByDegree[40]]
        let author = try #require(try await stack.followers(of: reader).first)  // Reed98 follows are mutual
        try await stack.warmHomes([reader])
        let built = try #require(try await stack.storedTimeline(of: reader))
        let key = "aviary:timeline:home:\(reader.id)"
        // Longer than the inactivity period (30 days), which a read would renew it to.
        let lifetime = 40 * 86_400
        try await writeOldSet(built.ids, sentinel: built.state == .whole ? 0 : 1, to: key, lifetime: lifetime, stack)

        // Before anyone reads it: a tweet fans out into it, and a deleted one leaves it.
        let posted = try await stack.post([(author, "kept while the set is old"), (author, "gone while the set is old")])
        try await stack.settle()
        let _: JSONValue = try await stack.stack.call("tweets", "tweets.delete", ["tweetId": .string(String(posted[1]))], as: author)
        try await stack.settle()
        #expect(try await stack.stack.redis.send(["TYPE", RedisArgument(key)]) == .simpleString("zset"))
        #expect(try await stack.stack.redis.send(["ZSCORE", RedisArgument(key), RedisArgument(LegacyTimeline.member(posted[0]))]).isNull == false)
        #expect(try await stack.stack.redis.send(["ZSCORE", RedisArgument(key), RedisArgument(LegacyTimeline.member(posted[1]))]).isNull)

        // The first read converts it: the same entries, the same state, and its own lifetime, where
        // a rebuild would have given it the inactivity period.
        #expect(try await stack.homeMismatches([reader]) == 0)
        #expect(try await stack.stack.redis.send(["TYPE", RedisArgument(key)]) == .simpleString("string"))
        let converted = try #require(try await stack.storedTimeline(of: reader))
        #expect(converted.state == built.state)
        #expect(converted.ids == (built.ids + [posted[0]]).sorted())
        #expect(((lifetime - 100)...lifetime).contains(try await stack.stack.redis.send(["TTL", RedisArgument(key)]).int ?? 0))
    }

    @Test("an old set left half-built is converted, then built, and its first read is answered from the services", .timeLimit(.minutes(1)))
    func oldSetBeingBuilt() async throws {
        let stack = try await TimelineStack.shared()
        let reader = stack.users[stack.nodesByDegree[41]]
        try await stack.warmHomes([reader])
        let built = try #require(try await stack.storedTimeline(of: reader))
        let key = "aviary:timeline:home:\(reader.id)"
        try await writeOldSet(Array(built.ids.suffix(3)), sentinel: 2, to: key, lifetime: 5000, stack)
        #expect(try await stack.homeMismatches([reader]) == 0)
        try await stack.waitForHomeSets([reader])
        #expect(try await stack.storedMismatches([reader]) == 0)
    }

    /// Replaces `key` with a sorted set of the layout before: `ids` over the sentinel `sentinel`.
    private func writeOldSet(_ ids: [Int64], sentinel: Int64, to key: String, lifetime: Int, _ stack: TimelineStack) async throws {
        let set: [RedisArgument] = ["ZADD", RedisArgument(key)] + ([sentinel] + ids).flatMap { [0, RedisArgument(LegacyTimeline.member($0))] }
        let replies = try await stack.stack.redis.pipeline([["DEL", RedisArgument(key)], set, ["EXPIRE", RedisArgument(key), RedisArgument(lifetime)]])
        try RedisError.throwFirstRefusal(in: replies)
    }
}
}
