import AviaryJSON
import Foundation
import Testing
import TestSupport

/// A group's picture, uploaded through the edge as an app does.
@Suite("Group pictures")
struct GroupPictureTests {
    @Test("any member sets the picture from an avatar upload of theirs, or removes it; anything else is refused")
    func picture() async throws {
        let edge = try await GatewayStack.shared()
        let (ana, ben, cat) = (try await edge.register("ana"), try await edge.register("ben"), try await edge.register("cat"))
        func call(_ method: String, _ params: [String: JSONValue], as user: EdgeUser) async throws -> JSONValue {
            try await EdgeHTTP.rpc(edge.url, method, params, token: user.token)
        }
        func upload(_ purpose: String, as user: EdgeUser) async throws -> JSONValue {
            let answer = try await EdgeHTTP.send(
                "POST", edge.url + "/media?purpose=\(purpose)", body: Data(MediaFixtures.png(width: 8, height: 8)),
                headers: ["Authorization": "Bearer \(user.token)", "Content-Type": "image/png"])
            #expect(answer.status == 201)
            return try #require(answer.json["id"])
        }
        let group = try #require(
            try await call("messaging.createGroup", ["title": "pictured", "memberIds": [.string(ben.id)]], as: ana)["result"]?["id"])
        let avatar = try await upload("avatar", as: ben)
        let set = try await call("messaging.setPicture", ["conversationId": group, "mediaId": avatar], as: ben)
        #expect(set["result"]?["picture"]?["id"] == avatar, "\(set)")
        let listed = try await call("messaging.conversations", [:], as: ana)
        #expect(listed["result"]?["items"]?.arrayValue?.first { $0["id"] == group }?["picture"]?["id"] == avatar)

        let forTweets = try await upload("tweet", as: ben)
        let wrongPurpose = try await call("messaging.setPicture", ["conversationId": group, "mediaId": forTweets], as: ben)
        #expect(wrongPurpose["error"]?["data"]?["field"] == "mediaId")
        let notTheirs = try await call("messaging.setPicture", ["conversationId": group, "mediaId": avatar], as: ana)
        #expect(notTheirs["error"]?["data"]?["field"] == "mediaId")
        let outsider = try await call("messaging.setPicture", ["conversationId": group, "mediaId": .null], as: cat)
        #expect(outsider["error"]?["data"]?["reason"] == "not_found")
        let removed = try await call("messaging.setPicture", ["conversationId": group, "mediaId": .null], as: ana)
        #expect(removed["result"]?["picture"] == .null)
    }
}
