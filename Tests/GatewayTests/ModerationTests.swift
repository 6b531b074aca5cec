import AviaryJSON
import Foundation
import Testing
import TestSupport

/// Reports and suspensions end to end through the edge, the admin role given by the `aviary` tool.
@Suite("Moderation", .serialized)
struct ModerationTests {
    @Test("a report keeps the tweets as they were; an admin suspends: sessions end, sign-in refused, tweets gone")
    func reportAndSuspend() async throws {
        let edge = try await GatewayStack.shared()
        let (ana, ben, admin) = (try await edge.register("ana"), try await edge.register("ben"), try await edge.register("admin"))
        func call(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser?) async throws -> JSONValue {
            try await EdgeHTTP.rpc(edge.url, method, params, token: user?.token)
        }
        func result(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser?) async throws -> JSONValue {
            let answer = try await call(method, params, as: user)
            return try #require(answer["result"], "\(method) answered \(answer)")
        }
        func error(_ method: String, _ params: [String: JSONValue], as user: EdgeUser?) async throws -> (reason: String?, field: String?) {
            let error = try await call(method, params, as: user)["error"]
            return (error?["data"]?["reason"]?.stringValue, error?["data"]?["field"]?.stringValue)
        }
        func ids(_ page: JSONValue) -> [String] { page["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [] }

        let word = "modword\(UInt32.random(in: 0...UInt32.max))"
        let reported = try #require(try await result("tweets.create", ["text": .string("ana spams \(word)")], as: ana)["id"])
        let kept = try #require(try await result("tweets.create", ["text": .string("ana again \(word)")], as: ana)["id"])
        let bens = try #require(try await result("tweets.create", ["text": "ben's own"], as: ben)["id"])
        _ = try await result("graph.follow", ["userId": .string(ana.id)], as: ben)
        #expect(await eventually { (try? ids(await result("timeline.home", as: ben)).contains(kept.stringValue ?? "")) == true })

        // Reporting: validated, and only by someone signed in.
        let user = JSONValue.string(ana.id)
        #expect(try await error("moderation.report", ["userId": user, "reason": "spam"], as: nil).reason == "unauthenticated")
        #expect(try await error("moderation.report", ["userId": .string(ben.id), "reason": "spam"], as: ben) == ("validation", "userId"))
        let rude = try await call("moderation.report", ["userId": user, "reason": "rude"], as: ben)["error"]
        #expect(rude?["code"] == -32602 && rude?["data"]?["field"] == "reason")
        #expect(rude?["message"]?.stringValue?.contains("spam, legal, violation, other") == true)
        #expect(try await error("moderation.report", ["userId": user, "reason": "spam", "tweetIds": [bens]], as: ben) == ("validation", "tweetIds"))
        let tooMany = JSONValue.array(Array(repeating: reported, count: 21))
        #expect(try await error("moderation.report", ["userId": user, "reason": "spam", "tweetIds": tooMany], as: ben) == ("validation", "tweetIds"))
        let longComment = JSONValue.string(String(repeating: "x", count: 1001))
        #expect(try await error("moderation.report", ["userId": user, "reason": "spam", "comment": longComment], as: ben) == ("validation", "comment"))
        let receipt = try await result(
            "moderation.report", ["userId": user, "reason": "spam", "tweetIds": [reported], "comment": "selling things"], as: ben)
        let reportID = try #require(receipt["reportId"]?.stringValue)
        // What was reported stays as it was when the author deletes it.
        _ = try await result("tweets.delete", ["tweetId": reported], as: ana)
        // Messages too: hers, in a conversation of the reporter's.
        let direct = try #require(try await result("messaging.openDirect", ["userId": .string(ben.id)], as: ana)["id"])
        let pitch = try #require(try await result("messaging.send", ["conversationId": direct, "text": "buy now"], as: ana)["id"])
        let reply = try #require(try await result("messaging.send", ["conversationId": direct, "text": "no"], as: ben)["id"])
        let group = try #require(
            try await result("messaging.createGroup", ["title": "private", "memberIds": [.string(admin.id)]], as: ana)["id"])
        let elsewhere = try #require(try await result("messaging.send", ["conversationId": group, "text": "hidden"], as: ana)["id"])
        for messages in [[reply], [elsewhere]] {
            let refused = try await error("moderation.report", ["userId": user, "reason": "spam", "messageIds": .array(messages)], as: ben)
            #expect(refused == ("validation", "messageIds"), "\(messages)")
        }
        let second = try await result("moderation.report", ["userId": user, "reason": "spam", "messageIds": [pitch]], as: ben)
        let messageReportID = try #require(second["reportId"]?.stringValue)
        _ = try await result("messaging.delete", ["messageId": pitch, "forEveryone": true], as: ana)

        // Only admins read reports and suspend; the tool makes one.
        #expect(try await error("moderation.reports", [:], as: ben).reason == "forbidden")
        #expect(try await error("moderation.suspend", ["userId": user, "reason": "spam"], as: ben).reason == "forbidden")
        let nobody = try await edge.stack.tool(["admin", "grant", "nobody_\(UInt32.random(in: 0...UInt32.max))"])
        #expect(nobody.status != 0 && nobody.output.contains("no account is named"))
        let granted = try await edge.stack.tool(["admin", "grant", admin.username])
        #expect(granted.status == 0, "\(granted.output)")
        let open = try await result("moderation.reports", [:], as: admin)
        let report = try #require(open["items"]?.arrayValue?.first { $0["id"]?.stringValue == reportID })
        #expect(report["reporter"]?["id"]?.stringValue == ben.id && report["user"]?["id"]?.stringValue == ana.id)
        #expect(report["reason"] == "spam" && report["comment"] == "selling things")
        #expect(report["tweets"]?.arrayValue?.first?["text"]?.stringValue == "ana spams \(word)")
        let messageReport = try #require(open["items"]?.arrayValue?.first { $0["id"]?.stringValue == messageReportID })
        #expect(messageReport["messages"]?.arrayValue?.first?["text"] == "buy now")

        // The suspension: sessions end at once, sign-in is refused with the reason, and her profile
        // and tweets leave every read (home timelines, search, her page, the tweet itself).
        #expect(try await error("moderation.suspend", ["userId": .string(admin.id), "reason": "x"], as: admin) == ("validation", "userId"))
        let other = try await edge.register("other")
        #expect(try await edge.stack.tool(["admin", "grant", other.username]).status == 0)
        #expect(try await error("moderation.suspend", ["userId": .string(other.id), "reason": "x"], as: admin) == ("conflict", "userId"))
        #expect(try await edge.stack.tool(["admin", "revoke", other.username]).status == 0)
        #expect(try await error("moderation.suspend", ["userId": "12345", "reason": "x"], as: admin).reason == "not_found")
        #expect(try await error("moderation.resolve", ["reportId": .string(reportID)], as: ben).reason == "forbidden")
        #expect(try await error("moderation.unsuspend", ["userId": user], as: ben).reason == "forbidden")
        #expect(try await error("moderation.suspend", ["userId": user, "reason": " "], as: admin) == ("validation", "reason"))
        let suspended = try await result("moderation.suspend", ["userId": user, "reason": "spam for hire"], as: admin)
        #expect((suspended["endedSessions"]?.intValue ?? 0) >= Int64(1))
        #expect(try await error("auth.me", [:], as: ana).reason == "unauthenticated")
        let login = try await call("auth.login", ["login": .string(ana.username), "password": "correct horse battery"], as: nil)
        #expect(login["error"]?["data"]?["reason"] == "forbidden")
        #expect(login["error"]?["message"]?.stringValue?.contains("spam for hire") == true)
        let wrongPassword = try await call("auth.login", ["login": .string(ana.username), "password": "wrong horse"], as: nil)
        #expect(wrongPassword["error"]?["data"]?["reason"] == "unauthenticated")
        #expect(try await error("auth.getUser", ["userId": user], as: ben).reason == "not_found")
        // Other tests' users have names like hers: she alone must be missing. Another's search may
        // read a streaming replica, up to its window behind (AVIARY_TEST_TOPOLOGY=cluster).
        #expect(await eventually { (try? await ids(result("auth.searchUsers", ["query": .string(ana.username)], as: ben)).contains(ana.id)) == false })
        // Every tweets instance hears of it within a second of the event.
        func shown() async throws -> [Bool] {
            [
                try await call("tweets.get", ["tweetId": kept], as: ben)["result"] != nil,
                try await ids(result("timeline.home", as: ben)).contains(kept.stringValue!),
                try await !ids(result("tweets.byUser", ["userId": user], as: ben)).isEmpty,
                try await !ids(result("tweets.search", ["query": .string(word)], as: nil)).isEmpty,
            ]
        }
        #expect(await eventually { (try? await shown()) == [false, false, false, false] })
        #expect(try await ids(result("tweets.byUser", ["userId": .string(ben.id)], as: ben)) == [bens.stringValue!])

        // Resolved, the report moves to the other list.
        let resolved = try await result("moderation.resolve", ["reportId": .string(reportID)], as: admin)
        #expect(resolved["resolvedBy"]?.stringValue == admin.id && resolved["user"]?["id"]?.stringValue == ana.id)
        #expect(resolved["userSuspendedAt"] != nil && resolved["userSuspendedAt"] != .null)
        #expect(try await ids(result("moderation.reports", [:], as: admin)).contains(reportID) == false)
        #expect(try await ids(result("moderation.reports", ["status": "resolved"], as: admin)).contains(reportID))
        #expect(try await error("moderation.resolve", ["reportId": "12345"], as: admin).reason == "not_found")

        // Lifted: she signs in again and her tweets come back.
        _ = try await result("moderation.unsuspend", ["userId": user], as: admin)
        let again = try await result("auth.login", ["login": .string(ana.username), "password": "correct horse battery"], as: nil)
        #expect(again["accessToken"]?.stringValue != nil)
        #expect(await eventually { (try? await shown()) == [true, true, true, true] })
        #expect(try await result("auth.getUser", ["userId": user], as: ben)["id"]?.stringValue == ana.id)
        // The role taken back, the admin is refused again.
        #expect(try await edge.stack.tool(["admin", "revoke", admin.username]).status == 0)
        #expect(try await error("moderation.reports", [:], as: admin).reason == "forbidden")
    }
}
