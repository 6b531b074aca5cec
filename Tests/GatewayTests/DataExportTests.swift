import AviaryJSON
import Foundation
import Postgres
import Testing
import TestSupport
import ZIPFoundation

/// A user's data export end to end: requested through the edge, prepared by auth from what the
/// services show the user, stored by media, downloaded once through its signed URL.
@Suite("Data export")
struct DataExportTests {
    @Test("the export's ZIP holds the profile, tweets, likes, follows, messages and media files, and downloads once")
    func export() async throws {
        let edge = try await GatewayStack.shared()
        let (fay, gus) = (try await edge.register("fay"), try await edge.register("gus"))
        func call(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser?) async throws -> JSONValue {
            try await EdgeHTTP.rpc(edge.url, method, params, token: user?.token)
        }
        func result(_ method: String, _ params: [String: JSONValue] = [:], as user: EdgeUser?) async throws -> JSONValue {
            let answer = try await call(method, params, as: user)
            return try #require(answer["result"], "\(method) answered \(answer)")
        }
        let image = Data(MediaFixtures.png(width: 11, height: 5))
        let upload = try await EdgeHTTP.send(
            "POST", edge.url + "/media?purpose=tweet", body: image,
            headers: ["Authorization": "Bearer \(fay.token)", "Content-Type": "image/png"])
        let mediaID = try #require(upload.json["id"]?.stringValue)
        _ = try await result("tweets.create", ["text": "exported words", "mediaIds": [.string(mediaID)]], as: fay)
        let gusTweet = try #require(try await result("tweets.create", ["text": "gus posts"], as: gus)["id"])
        _ = try await result("tweets.like", ["tweetId": gusTweet], as: fay)
        _ = try await result("graph.follow", ["userId": .string(gus.id)], as: fay)
        let direct = try #require(try await result("messaging.openDirect", ["userId": .string(gus.id)], as: fay)["id"]?.stringValue)
        _ = try await result("messaging.send", ["conversationId": .string(direct), "text": "a private word"], as: fay)

        let requested = try await result("auth.requestExport", as: fay)
        #expect(requested["status"] == "preparing")
        #expect(try await call("auth.requestExport", as: fay)["error"]?["data"]?["reason"] == "conflict")
        #expect(try await call("auth.requestExport", as: nil)["error"]?["data"]?["reason"] == "unauthenticated")
        var ready: JSONValue?
        _ = await eventually(timeout: .seconds(30), interval: .milliseconds(200)) {
            ready = try? await result("auth.exports", as: fay).arrayValue?.first
            return ready?["status"] == "ready"
        }
        let url = try #require(ready?["url"]?.stringValue, "the export did not become ready: \(String(describing: ready))")
        #expect(ready?["id"] == requested["id"] && ready?["expiresAt"] != nil)
        // Gus sees only his own (none).
        #expect(try await result("auth.exports", as: gus) == [])

        let download = try await EdgeHTTP.send("GET", url)
        #expect(download.status == 200)
        let archive = try Archive(data: download.body, accessMode: .read)
        func file(_ path: String) throws -> Data {
            let entry = try #require(archive["aviary-export/\(path)"], "the ZIP has no \(path)")
            var data = Data()
            _ = try archive.extract(entry) { data.append($0) }
            return data
        }
        func text(_ path: String) throws -> String { String(decoding: try file(path), as: UTF8.self) }
        #expect(try text("profile.json").contains(fay.username))
        #expect(try text("tweets.json").contains("exported words"))
        #expect(try text("likes.json").contains("gus posts"))
        #expect(try text("following.json").contains(gus.username))
        #expect(try text("conversations.json").contains(direct))
        #expect(try text("messages/\(direct).json").contains("a private word"))
        #expect(try file("media/\(mediaID).png") == image)
        // Once: the second download finds nothing, and the list says so.
        #expect(try await EdgeHTTP.send("GET", url).status == 404)
        #expect(try await result("auth.exports", as: fay).arrayValue?.first?["status"] == "downloaded")
        // Only auth uploads exports.
        let forged = try await call(
            "media.beginUpload", ["contentType": "application/zip", "byteSize": 100, "purpose": "export"], as: fay)
        #expect(forged["error"]?["data"]?["reason"] == "forbidden")
        let internalBegin = try await call("media.beginExportUpload", ["ownerId": .string(fay.id), "byteSize": 100], as: fay)
        #expect(internalBegin["result"] == nil && internalBegin["error"] != nil, "\(internalBegin)")
    }

    @Test("an export not downloaded within 7 days is deleted from media and listed as expired")
    func expiry() async throws {
        let edge = try await GatewayStack.shared()
        let ivy = try await edge.register("ivy")
        func exports() async throws -> JSONValue {
            try #require(try await EdgeHTTP.rpc(edge.url, "auth.exports", [:], token: ivy.token)["result"]?.arrayValue?.first)
        }
        let requested = try #require(try await EdgeHTTP.rpc(edge.url, "auth.requestExport", [:], token: ivy.token)["result"])
        var ready: JSONValue?
        _ = await eventually(timeout: .seconds(30), interval: .milliseconds(200)) {
            ready = try? await exports()
            return ready?["status"] == "ready"
        }
        let url = try #require(ready?["url"]?.stringValue, "the export did not become ready: \(String(describing: ready))")
        // Eight days on, as far as auth's sweep (every second here) can tell.
        try await edge.stack.database.execute(
            "UPDATE auth.exports SET ready_at = now() - interval '8 days' WHERE id = $1", [Int64(try #require(requested["id"]?.stringValue))!])
        var listed: JSONValue?
        #expect(await eventually(timeout: .seconds(15)) {
            listed = try? await exports()
            return listed?["status"] == "expired"
        }, "\(String(describing: listed))")
        #expect(listed?["url"] == nil)
        #expect(try await EdgeHTTP.send("GET", url).status == 404)
    }
}
