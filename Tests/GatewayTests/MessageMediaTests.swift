import AviaryJSON
import Foundation
import Testing
import TestSupport

/// A message's picture, uploaded through the edge, and what deleting the message does to it.
@Suite("Message media")
struct MessageMediaTests {
    @Test("a message deleted for everyone takes its picture with it: the URL and media.get answer not found")
    func deletedMessageMedia() async throws {
        let edge = try await GatewayStack.shared()
        let (kim, lou) = (try await edge.register("kim"), try await edge.register("lou"))
        func call(_ method: String, _ params: [String: JSONValue], as user: EdgeUser) async throws -> JSONValue {
            try await EdgeHTTP.rpc(edge.url, method, params, token: user.token)
        }
        let direct = try #require(try await call("messaging.openDirect", ["userId": .string(lou.id)], as: kim)["result"]?["id"]?.stringValue)
        let upload = try await EdgeHTTP.send(
            "POST", edge.url + "/media?purpose=message&conversationId=\(direct)", body: Data(MediaFixtures.png(width: 13, height: 3)),
            headers: ["Authorization": "Bearer \(kim.token)", "Content-Type": "image/png"])
        let mediaID = try #require(upload.json["id"], "\(upload.status) \(upload.json)")
        let sent = try #require(
            try await call("messaging.send", ["conversationId": .string(direct), "mediaId": mediaID], as: kim)["result"])
        let url = try #require(sent["media"]?["url"]?.stringValue)
        #expect(try await EdgeHTTP.send("GET", url).status == 200)
        #expect(try await call("media.get", ["mediaId": mediaID], as: lou)["result"]?["id"] == mediaID)

        _ = try await call("messaging.delete", ["messageId": try #require(sent["id"]), "forEveryone": true], as: kim)
        #expect(await eventually { (try? await EdgeHTTP.send("GET", url).status) == 404 })
        #expect(try await call("media.get", ["mediaId": mediaID], as: kim)["error"]?["data"]?["reason"] == "not_found")
    }
}
