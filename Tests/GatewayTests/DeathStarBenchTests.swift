import AviaryJSON
import Foundation
import Testing
import TestSupport

/// The DeathStarBench adapter (`AVIARY_GATEWAY_DSB_COMPAT=1`): its HTTP API as its own scripts call
/// it, form bodies unescaped as they send them, answers shaped as its front's.
@Suite("DeathStarBench adapter", .serialized)
struct DeathStarBenchTests {
    private func form(_ url: String, _ path: String, _ body: String) async throws -> EdgeHTTP.Reply {
        try await EdgeHTTP.send(
            "POST", url + path, body: Data(body.utf8), headers: ["Content-Type": "application/x-www-form-urlencoded"])
    }

    @Test("register, follow by name and by id, compose as its scripts do, read home and user timelines")
    func scriptsRunUnchanged() async throws {
        let edge = try await GatewayStack.shared()
        let dsb = try await edge.extraGateway(["AVIARY_GATEWAY_DSB_COMPAT": "1"])
        defer { dsb.process.kill() }
        let base = Int.random(in: 1000...90000) * 10
        let names = (0..<3).map { "username_\(base + $0)" }
        for offset in 0..<3 {
            let id = base + offset
            let registered = try await form(
                dsb.url, "/wrk2-api/user/register",
                "first_name=first_name_\(id)&last_name=last_name_\(id)&username=\(names[offset])&password=password_\(id)&user_id=\(id)")
            #expect(registered.status == 200, "\(String(decoding: registered.body, as: UTF8.self))")
        }
        let again = try await form(dsb.url, "/wrk2-api/user/register", "first_name=a&last_name=b&username=\(names[0])&password=password_x&user_id=\(base)")
        #expect(again.status == 500)

        let byName = try await form(dsb.url, "/wrk2-api/user/follow", "user_name=\(names[1])&followee_name=\(names[0])")
        #expect(byName.status == 200 && String(decoding: byName.body, as: UTF8.self).hasPrefix("Success"))
        let byID = try await form(dsb.url, "/wrk2-api/user/follow", "user_id=\(base + 2)&followee_id=\(base)")
        #expect(byID.status == 200)
        let incomplete = try await form(dsb.url, "/wrk2-api/user/follow", "user_name=\(names[1])")
        #expect(incomplete.status == 400)

        // As compose-post.lua sends it: 256 characters, mentions and links, media ids, nothing escaped.
        let text = String(repeating: "x", count: 256) + " @\(names[1]) @\(names[2]) http://" + String(repeating: "a", count: 64)
            + " http://" + String(repeating: "b", count: 64)
        let composed = try await form(
            dsb.url, "/wrk2-api/post/compose",
            #"username=\#(names[0])&user_id=\#(base)&text=\#(text)&media_ids=["123456789012345678"]&media_types=["png"]&post_type=0"#)
        #expect(composed.status == 200, "\(String(decoding: composed.body, as: UTF8.self))")

        var home = JSONValue.null
        #expect(await eventually {
            let reply = try? await EdgeHTTP.send("GET", dsb.url + "/wrk2-api/home-timeline/read?user_id=\(base + 1)&start=0&stop=10")
            home = reply?.json ?? .null
            return home.arrayValue?.isEmpty == false
        })
        let post = try #require(home.arrayValue?.first)
        #expect(post["text"]?.stringValue == text)
        #expect(post["creator"]?["user_id"]?.stringValue == String(base))
        #expect(post["creator"]?["username"]?.stringValue == names[0])
        #expect(Set(post["user_mentions"]?.arrayValue?.compactMap { $0["user_id"]?.stringValue } ?? []) == [String(base + 1), String(base + 2)])
        #expect(post["urls"]?.arrayValue?.count == 2)
        #expect(post["post_id"]?.stringValue?.isEmpty == false && post["timestamp"]?.stringValue != "0")

        let own = try await EdgeHTTP.send("GET", dsb.url + "/wrk2-api/user-timeline/read?user_id=\(base)&start=0&stop=10")
        #expect(own.json.arrayValue?.count == 1)
        let past = try await EdgeHTTP.send("GET", dsb.url + "/wrk2-api/home-timeline/read?user_id=\(base + 1)&start=5&stop=15")
        #expect(past.json.arrayValue?.isEmpty == true)
        let unknown = try await EdgeHTTP.send("GET", dsb.url + "/wrk2-api/home-timeline/read?user_id=\(base + 9)&start=0&stop=10")
        #expect(unknown.status == 500)
    }

    @Test("the adapter is off by default and refused on an address other than loopback")
    func offAndGuarded() async throws {
        let edge = try await GatewayStack.shared()
        let off = try await EdgeHTTP.send("GET", edge.url + "/wrk2-api/home-timeline/read?user_id=1&start=0&stop=10")
        #expect(off.status == 404)
        await #expect(throws: (any Error).self) {
            _ = try await edge.extraGateway(["AVIARY_GATEWAY_DSB_COMPAT": "1", "AVIARY_HOST": "0.0.0.0"])
        }
    }
}
