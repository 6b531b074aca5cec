import AviaryAPI
import AviaryJSON
import Foundation
import Postgres
import RPC
import ServiceKit
import Testing
import TestSupport

@Suite struct NotificationsServiceTests {
    @Test func followLikeReplyAndMentionArriveOnceEachInOrderOnAnotherInstance() async throws {
        let (stack, extra) = try await NotificationsStack.shared()
        let (author, fan) = (try await stack.makeUser("author"), try await stack.makeUser("fan"))
        // Subscribed on the extra instance: every event is consumed by whichever instance and
        // crosses through Redis pub/sub.
        let live = try await NotificationsConnection.open(author, port: extra.rpcPort)
        _ = try await live.subscribe()
        let tweet = try await stack.tweet("hello world", as: author)

        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": author.idValue], as: fan)
        let follow = try await live.events(1)
        let _: JSONValue = try await stack.call("tweets", "tweets.like", ["tweetId": .string(tweet)], as: fan)
        let like = try await live.events(1)
        let reply = try await stack.tweet("nice one", as: fan, replyTo: tweet)
        let replied = try await live.events(1)
        let mention = try await stack.tweet("look @\(author.username)", as: fan)
        let mentioned = try await live.events(1)

        let events = follow + like + replied + mentioned
        #expect(events.map(\.pushedType) == ["follow", "like", "reply", "mention"])
        #expect(events.allSatisfy { $0["notification"]?["actor"]?["id"] == fan.idValue })
        #expect(like.first?["notification"]?["tweet"]?["id"] == .string(tweet))
        #expect(replied.first?["notification"]?["tweet"]?["id"] == .string(reply))
        #expect(mentioned.first?["notification"]?["tweet"]?["id"] == .string(mention))
        #expect(try await live.events(1, within: .milliseconds(500)).isEmpty)

        let listed = try await stack.notifications(of: author)
        #expect(listed.map { $0["type"]?.stringValue } == ["mention", "reply", "like", "follow"])
        #expect(listed.map { $0["id"] } == events.reversed().map { $0["notification"]?["id"] })
        #expect(listed[2]["tweet"]?["likedByMe"] == false && listed[2]["tweet"]?["likes"] == 1)
        #expect(listed.allSatisfy { $0["read"] == false && $0["conversationId"] == .null })
        let unread: JSONValue = try await stack.call("notifications", "notifications.unreadCount", as: author)
        #expect(unread["count"] == 4)
        let marked: JSONValue = try await stack.call(
            "notifications", "notifications.markRead", ["upTo": listed[2]["id"] ?? .null], as: author)
        #expect(marked["count"] == 2)
        let after = try await stack.notifications(of: author)
        #expect(after.map { $0["read"] } == [false, false, true, true])
        let all: JSONValue = try await stack.call("notifications", "notifications.markRead", as: author)
        #expect(all["count"] == 0)

        let first = ["notificationId": listed[0]["id"] ?? .null]
        let notFans = await rpcError { let _: JSONValue = try await stack.call("notifications", "notifications.dismiss", first, as: fan) }
        #expect(notFans?.reason == "not_found")
        let _: JSONValue = try await stack.call("notifications", "notifications.dismiss", first, as: author)
        #expect(try await stack.notifications(of: author).map { $0["id"] } == listed.dropFirst().map { $0["id"] })
        let again = await rpcError { let _: JSONValue = try await stack.call("notifications", "notifications.dismiss", first, as: author) }
        #expect(again?.reason == "not_found")
        let _: JSONValue = try await stack.call("notifications", "notifications.clear", as: author)
        #expect(try await stack.notifications(of: author).isEmpty)
        await live.close()
    }

    @Test func unlikeUnfollowAndDeletionWithdrawAndOwnActionsNotifyNobody() async throws {
        let (stack, _) = try await NotificationsStack.shared()
        let (author, fan) = (try await stack.makeUser("author"), try await stack.makeUser("fan"))
        let live = try await NotificationsConnection.open(author, port: stack.process("notifications").rpcPort)
        _ = try await live.subscribe()
        let tweet = try await stack.tweet("withdraw me", as: author)
        // Own actions first: liking, replying to and mentioning oneself notify nobody.
        let _: JSONValue = try await stack.call("tweets", "tweets.like", ["tweetId": .string(tweet)], as: author)
        _ = try await stack.tweet("talking to myself @\(author.username)", as: author, replyTo: tweet)

        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": author.idValue], as: fan)
        let _: JSONValue = try await stack.call("tweets", "tweets.like", ["tweetId": .string(tweet)], as: fan)
        let reply = try await stack.tweet("a reply", as: fan, replyTo: tweet)
        let made = try await live.events(3)
        // Once each; in order within a topic (the like and the reply come through the tweets stream,
        // which one instance consumes at a time). The follow comes through the graph stream, which
        // nothing orders against the tweets stream.
        #expect(made.compactMap(\.pushedType).sorted() == ["follow", "like", "reply"])
        #expect(made.compactMap(\.pushedType).filter { $0 != "follow" } == ["like", "reply"])

        let _: JSONValue = try await stack.call("tweets", "tweets.unlike", ["tweetId": .string(tweet)], as: fan)
        let _: JSONValue = try await stack.call("social-graph", "graph.unfollow", ["userId": author.idValue], as: fan)
        let _: JSONValue = try await stack.call("tweets", "tweets.delete", ["tweetId": .string(reply)], as: fan)
        let withdrawn = try await live.events(3)
        #expect(withdrawn.map(\.pushedType) == ["withdrawn", "withdrawn", "withdrawn"])
        #expect(Set(withdrawn.compactMap { $0["notificationId"] }) == Set(made.compactMap { $0["notification"]?["id"] }))
        #expect(try await stack.notifications(of: author).isEmpty)
        await live.close()
    }

    @Test func aSubscriberThatReconnectsWithItsLastIdMissesNothing() async throws {
        let (stack, extra) = try await NotificationsStack.shared()
        let author = try await stack.makeUser("author")
        let fans = try await stack.makeUsers(5, "fan")
        var live = try await NotificationsConnection.open(author, port: extra.rpcPort)
        _ = try await live.subscribe()
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": author.idValue], as: fans[0])
        let first = try #require(try await live.events(1).first?["notification"]?["id"]?.stringValue)
        await live.close()

        // Missed while away.
        for fan in fans[1...2] {
            let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": author.idValue], as: fan)
        }
        #expect(await eventually { (try? await stack.notifications(of: author).count) == 3 })
        // Back on the other instance; more arrive while and after it catches up.
        live = try await NotificationsConnection.open(author, port: stack.process("notifications").rpcPort)
        async let follows: Void = {
            for fan in fans[3...4] {
                let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": author.idValue], as: fan)
            }
        }()
        _ = try await live.subscribe(lastId: first)
        try await follows
        let events = try await live.events(4)
        // Exactly once each; two instances share the consumer group, so two follows made back to
        // back may be stored in either order.
        let actors = events.compactMap { $0["notification"]?["actor"]?["id"] }
        #expect(actors.count == 4 && Set(actors) == Set(fans[1...4].map(\.idValue)))
        let ids = events.compactMap { $0["notification"]?["id"]?.stringValue }
        #expect(Set(ids).count == 4 && !ids.contains(first))
        #expect(try await live.events(1, within: .milliseconds(500)).isEmpty)
        await live.close()
    }

    @Test func groupedListsCountLikesOfATweetAndFollows() async throws {
        let (stack, _) = try await NotificationsStack.shared()
        let author = try await stack.makeUser("author")
        let fans = try await stack.makeUsers(4, "fan")
        let tweet = try await stack.tweet("group me", as: author)
        // Each phase lands before the next, so the three items order the same way on any instance.
        for fan in fans[0...2] {
            let _: JSONValue = try await stack.call("tweets", "tweets.like", ["tweetId": .string(tweet)], as: fan)
        }
        #expect(await eventually { (try? await stack.notifications(of: author).count) == 3 })
        for fan in fans[2...3] {
            let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": author.idValue], as: fan)
        }
        #expect(await eventually { (try? await stack.notifications(of: author).count) == 5 })
        _ = try await stack.tweet("hey @\(author.username)", as: fans[3])
        #expect(await eventually { (try? await stack.notifications(of: author).count) == 6 })

        let grouped = try await stack.notifications(of: author, ["grouped": true])
        #expect(grouped.map { $0["type"]?.stringValue } == ["mention", "follow", "like"])
        #expect(grouped.map { $0["count"]?.intValue } == [1, 2, 3])
        #expect(Set(grouped[2]["actors"]?.arrayValue?.compactMap { $0["id"] } ?? []) == Set(fans[0...2].map(\.idValue)))
        #expect(grouped[2]["actor"]?["id"] == grouped[2]["actors"]?.arrayValue?.first?["id"] && grouped[2]["tweet"]?["id"] == .string(tweet))

        // One item per page, no repeats, and the cursor ends.
        var seen: [String] = []
        var cursor: JSONValue = .null
        var lastPage: JSONValue = .null
        repeat {
            var params: [String: JSONValue] = ["grouped": true, "limit": 1]
            if cursor != .null { params["cursor"] = cursor }
            let page: JSONValue = try await stack.call("notifications", "notifications.list", params, as: author)
            seen += page["items"]?.arrayValue?.compactMap { $0["type"]?.stringValue } ?? []
            cursor = page["nextCursor"] ?? .null
            lastPage = page
        } while cursor != .null && seen.count < 10
        #expect(seen == ["mention", "follow", "like"])
        // The last page says so with a null cursor, as contract §2 writes pages.
        #expect(lastPage.objectValue?.keys.contains("nextCursor") == true && lastPage["nextCursor"] == .null)

        let likesOnly = try await stack.notifications(of: author, ["types": ["like"]])
        #expect(likesOnly.count == 3 && likesOnly.allSatisfy { $0["type"] == "like" && $0["count"] == nil })
        let paged = try await stack.notifications(of: author, ["limit": 4])
        #expect(paged.count == 4)
    }

    /// A viral tweet's 30,000 likes make one item, counted exactly, and paging back over 25 older
    /// windows (days) neither repeats nor skips an item.
    @Test func groupedPagesCountLargeGroupsAndWalkManyWindows() async throws {
        let (stack, _) = try await NotificationsStack.shared()
        let author = try await stack.makeUser("viral")
        let fans = try await stack.makeUsers(4, "liker")
        let tweet = try await stack.tweet("to the moon", as: author)
        let day: Int64 = 86_400_000
        let now = Int64(Date().timeIntervalSince1970 * 1000) - SnowflakeGenerator.epochMilliseconds
        let yesterday = (now / day - 1) * day
        let fanIDs = fans.map { Int64($0.id.value) }
        // Yesterday's likes, 1,000 per millisecond; a follow on each of the 25 days before, by fans in turn.
        try await stack.database.execute(
            """
            INSERT INTO notifications.notifications (id, recipient_id, type, actor_id, tweet_id, key, created_at)
            SELECT (($3::bigint + n / 1000) << 22) | (n % 1000), $1, 'like', ($2::bigint[])[1 + n % 4], $4, 'bulk-like:' || n, now()
            FROM generate_series(0, 29999) AS n
            """, [author.id.value, fanIDs, yesterday + 1000, Int64(tweet)!])
        try await stack.database.execute(
            """
            INSERT INTO notifications.notifications (id, recipient_id, type, actor_id, key, created_at)
            SELECT (($3::bigint - k * $4::bigint) << 22) | k, $1, 'follow', ($2::bigint[])[1 + k % 4], 'bulk-follow:' || k, now()
            FROM generate_series(1, 25) AS k
            """, [author.id.value, fanIDs, yesterday + 5000, day])

        var items: [JSONValue] = []
        var cursor: JSONValue = .null
        repeat {
            var params: [String: JSONValue] = ["grouped": true, "limit": 5]
            if cursor != .null { params["cursor"] = cursor }
            let page: JSONValue = try await stack.call("notifications", "notifications.list", params, as: author)
            items += page["items"]?.arrayValue ?? []
            cursor = page["nextCursor"] ?? .null
        } while cursor != .null && items.count < 100
        #expect(items.count == 26)
        #expect(items.first?["type"] == "like" && items.first?["count"] == 30_000 && items.first?["read"] == false)
        let likers = items.first?["actors"]?.arrayValue?.compactMap { $0["id"] }
        #expect(likers == [fans[3].idValue, fans[2].idValue, fans[1].idValue], "the newest three, newest first")
        let follows = items.dropFirst()
        #expect(follows.allSatisfy { $0["type"] == "follow" && $0["count"] == 1 })
        #expect(follows.compactMap { $0["actor"]?["id"] } == (1...25).map { fans[$0 % 4].idValue })
        let ids = items.compactMap { $0["id"]?.stringValue.flatMap { Int64($0) } }
        #expect(ids == ids.sorted(by: >) && Set(ids).count == 26)
    }

    /// Two topics' notifications for one user stored at the same moment: the follow draws its id,
    /// then waits (on a row of the test's open transaction) while the like is stored. A subscriber
    /// that saw what was pushed, left, and came back with the last id it saw still gets both, once.
    @Test func aReconnectingSubscriberMissesNoNotificationStoredAlongsideAnother() async throws {
        let (stack, _) = try await NotificationsStack.shared()
        let author = try await stack.makeUser("raced")
        let (follower, liker) = (try await stack.makeUser("follower"), try await stack.makeUser("liker"))
        let tweet = try await stack.tweet("raced", as: author)
        let port = stack.process("notifications").rpcPort
        var live = try await NotificationsConnection.open(author, port: port)
        _ = try await live.subscribe()

        // The follow's insert waits for this row's transaction (rolled back), with its id already drawn.
        var seen = try await holdingTransaction(
            "INSERT INTO notifications.notifications (id, recipient_id, type, actor_id, key, created_at) VALUES (1, $1, 'follow', $2, $3, now())",
            [Int64(author.id.value), Int64(follower.id.value), "f:\(follower.id.value)"], on: stack.database, commit: false
        ) {
            let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": author.idValue], as: follower)
            try await Task.sleep(for: .milliseconds(300))
            let _: JSONValue = try await stack.call("tweets", "tweets.like", ["tweetId": .string(tweet)], as: liker)
            // What arrives meanwhile, then gone; the follow is stored while nobody listens.
            let seen = try await live.events(1, within: .seconds(1))
            await live.close()
            return seen
        }
        #expect(await eventually { (try? await stack.notifications(of: author).count) == 2 })

        live = try await NotificationsConnection.open(author, port: port)
        let lastSeen = seen.last?["notification"]?["id"]?.stringValue
        _ = try await live.subscribe(lastId: lastSeen ?? "1")
        seen += try await live.events(2 - seen.count, within: .seconds(5))
        #expect(try await live.events(1, within: .milliseconds(300)).isEmpty)
        #expect(Set(seen.compactMap(\.pushedType)) == ["follow", "like"] && seen.count == 2)
        await live.close()
    }

    /// markRead answers what stays unread after it, even when another device marked the same
    /// notifications a moment before: its update skips them, and the count still sees them read.
    @Test func markReadCountsWhatAConcurrentMarkReadMarked() async throws {
        let (stack, _) = try await NotificationsStack.shared()
        let author = try await stack.makeUser("twodevices")
        let fan = try await stack.makeUser("fan")
        try await stack.database.execute(
            """
            INSERT INTO notifications.notifications (id, recipient_id, type, actor_id, key, created_at)
            SELECT ($3::bigint << 22) | n, $1, 'mention', $2, 'm:' || n, now() FROM generate_series(1, 3) AS n
            """, [Int64(author.id.value), Int64(fan.id.value), Int64(1_000_000)])
        let marking = try await holdingTransaction(
            "UPDATE notifications.notifications SET read = true WHERE recipient_id = $1", [Int64(author.id.value)],
            on: stack.database
        ) {
            let marking = Task { () throws -> JSONValue in
                try await stack.call("notifications", "notifications.markRead", as: author)
            }
            try await Task.sleep(for: .milliseconds(300))  // waiting on the rows of the other "device"
            return marking
        }
        #expect(try await marking.value["count"] == 0)
    }

    /// A subscriber back after a long absence gets up to 1,000 missed notifications at once: a
    /// burst over the socket's high-water mark, which is no sign of a slow reader.
    @Test func aLongCatchUpArrivesWholeAndKeepsTheConnection() async throws {
        let (stack, _) = try await NotificationsStack.shared()
        let (away, fan) = (try await stack.makeUser("away"), try await stack.makeUser("fan"))
        let tweet = try await stack.tweet("much discussed", as: away)
        try await stack.database.execute(
            """
            INSERT INTO notifications.notifications (id, recipient_id, type, actor_id, tweet_id, key, created_at)
            SELECT ($3::bigint << 22) | n, $1, 'mention', $2, $4, 'burst:' || n, now() FROM generate_series(1, 950) AS n
            """, [Int64(away.id.value), Int64(fan.id.value), Int64(2_000_000), Int64(tweet)!])
        let live = try await NotificationsConnection.open(away, port: stack.process("notifications").rpcPort)
        _ = try await live.subscribe(lastId: "1")
        let caughtUp = try await live.events(950, within: .seconds(20))
        #expect(caughtUp.count == 950)
        #expect(caughtUp.compactMap { $0["notification"]?["id"]?.stringValue.flatMap { Int64($0) } }
            == (1...950).map { (Int64(2_000_000) << 22) | Int64($0) })
        // Still connected, and still served.
        let unread: JSONValue = try await live.call("notifications.unreadCount")
        #expect(unread["count"] == 950)
        await live.close()
    }

    @Test func messagesAndRetriedEventsAreStoredOnce() async throws {
        let (stack, _) = try await NotificationsStack.shared()
        let (sender, away) = (try await stack.makeUser("sender"), try await stack.makeUser("away"))
        let outboxID = Int64.random(in: 1_000_000...Int64(Int32.max))
        let payload: JSONValue = [
            "messageId": "123456789", "conversationId": "987654321", "senderId": sender.idValue,
            "offlineRecipientIds": [away.idValue, sender.idValue], "createdAt": "2026-11-21T22:35:00.123Z",
        ]
        for _ in 0..<2 {
            try await stack.appendEvent(topic: "messaging", type: "message", payload: payload, source: "messaging", outboxID: outboxID)
        }
        // The same message again under another outbox row: the unique key still holds.
        try await stack.appendEvent(topic: "messaging", type: "message", payload: payload, source: "messaging", outboxID: outboxID + 1)
        #expect(await eventually { (try? await stack.notifications(of: away).count) == 1 })
        try await Task.sleep(for: .milliseconds(300))
        let items = try await stack.notifications(of: away)
        #expect(items.count == 1)
        #expect(items.first?["type"] == "message" && items.first?["conversationId"] == "987654321")
        #expect(items.first?["createdAt"] == "2026-11-21T22:35:00.123Z" && items.first?["tweet"] == .null)
        #expect(try await stack.notifications(of: sender).isEmpty)
    }

    /// A batch applies its events in order (a follow withdrawn then made again stays), and an event
    /// it holds twice counts once.
    @Test func aBatchAppliesItsEventsInOrderAndEachOnce() async throws {
        let (stack, _) = try await NotificationsStack.shared()
        let (followee, first, second) =
            (try await stack.makeUser("followee"), try await stack.makeUser("first"), try await stack.makeUser("second"))
        func edge(_ follower: StackUser) -> JSONValue {
            ["followerId": follower.idValue, "followeeId": followee.idValue, "at": "2026-11-25T10:00:00Z"]
        }
        let base = Int64.random(in: 1_000_000...Int64(Int32.max))
        try await stack.appendEvents(
            topic: "graph",
            [
                ("follow", edge(first), base), ("unfollow", edge(first), base + 1), ("follow", edge(first), base + 2),
                ("follow", edge(first), base + 2), ("follow", edge(second), base + 3), ("unfollow", edge(second), base + 4),
                ("follow", edge(second), base + 5), ("unfollow", edge(second), base + 6),
            ], source: "social_graph")
        #expect(await eventually { (try? await stack.notifications(of: followee).count) == 1 })
        try await Task.sleep(for: .milliseconds(300))
        let items = try await stack.notifications(of: followee)
        #expect(items.count == 1)
        #expect(items.first?["type"] == "follow" && items.first?["actor"]?["id"] == first.idValue)
    }

    @Test func refusals() async throws {
        let (stack, _) = try await NotificationsStack.shared()
        let (author, fan, stranger) =
            (try await stack.makeUser("author"), try await stack.makeUser("fan"), try await stack.makeUser("stranger"))
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": author.idValue], as: fan)
        #expect(await eventually { (try? await stack.notifications(of: author).count) == 1 })
        // Another user's notifications are invisible, and marking them is not possible.
        #expect(try await stack.notifications(of: stranger).isEmpty)
        let strangerMark: JSONValue = try await stack.call("notifications", "notifications.markRead", as: stranger)
        #expect(strangerMark["count"] == 0)
        let unread: JSONValue = try await stack.call("notifications", "notifications.unreadCount", as: author)
        #expect(unread["count"] == 1)

        for method in ["notifications.list", "notifications.unreadCount", "notifications.markRead", "notifications.subscribe"] {
            #expect(await reason { let _: JSONValue = try await stack.call("notifications", method) } == "unauthenticated")
        }
        #expect(await reason {
            let _: JSONValue = try await stack.call("notifications", "notifications.list", ["cursor": "bogus!"], as: author)
        } == "validation")
        // Well formed, but not one this service makes (its cursors carry one positive id twice).
        for forged in [KeysetCursor(key: 5, id: -7), KeysetCursor(key: 0, id: 0), KeysetCursor(key: 3, id: 9)] {
            for grouped in [false, true] {
                #expect(await reason {
                    let _: JSONValue = try await stack.call(
                        "notifications", "notifications.list", ["cursor": .string(forged.encoded), "grouped": .bool(grouped)], as: author)
                } == "validation")
            }
        }
        #expect(await reason {
            let _: JSONValue = try await stack.call("notifications", "notifications.list", ["types": ["poke"]], as: author)
        } != nil)
        #expect(await reason {
            let _: JSONValue = try await stack.call("notifications", "notifications.list", ["limit": 101], as: author)
        } == "validation")
        #expect(await reason {
            let _: JSONValue = try await stack.call("notifications", "notifications.markRead", ["upTo": "12x"], as: author)
        } == "validation")
        let live = try await NotificationsConnection.open(author, port: stack.process("notifications").rpcPort)
        #expect(await reason { _ = try await live.call("notifications.unsubscribe", ["subscription": "99"]) } == "not_found")
        let subscription = try await live.subscribe()
        // Another connection cannot end it.
        let other = try await NotificationsConnection.open(author, port: stack.process("notifications").rpcPort)
        #expect(await reason { _ = try await other.call("notifications.unsubscribe", ["subscription": .string(subscription)]) } == "not_found")
        _ = try await live.call("notifications.unsubscribe", ["subscription": .string(subscription)])
        await live.close()
        await other.close()
    }
}

/// Killing the service while events are produced loses none: they wait in the stream and are
/// stored when it returns. A stack of its own, since it restarts the service.
@Suite struct NotificationsOutageTests {
    @Test func nothingIsLostWhenTheServiceIsKilledWhileEventsAreProduced() async throws {
        // Redis database 13: a stack flushes its database on start, and 10 is the shared stack's.
        let stack = try await ServiceStack.start(["auth", "social-graph", "notifications"], redisDatabase: 13)
        let author = try await stack.makeUser("author")
        let fans = try await stack.makeUsers(30, "fan")
        async let produced: Void = {
            for fan in fans {
                let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": author.idValue], as: fan)
                try await Task.sleep(for: .milliseconds(10))
            }
        }()
        try await Task.sleep(for: .milliseconds(100))
        try await stack.restart("notifications")
        try await produced
        #expect(await eventually(timeout: .seconds(60)) { (try? await stack.notifications(of: author, ["limit": 100]).count) == 30 })
        let items = try await stack.notifications(of: author, ["limit": 100])
        #expect(Set(items.compactMap { $0["actor"]?["id"] }) == Set(fans.map(\.idValue)))
    }
}
