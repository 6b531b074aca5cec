import AviaryAPI
import AviaryJSON
import Foundation
import Logging
import RPC
import TestSupport
import Testing

@Suite("message media")
struct PrivateMediaTests {
    @Test("message media is served only with a valid, unexpired signature; members read it, others do not")
    func signedAndMembersOnly() async throws {
        let media = try await MediaStack.shared()
        let users = try await media.stack.makeUsers(3, "priv")
        let (rae, sam, tom) = (users[0], users[1], users[2])
        let conversation = Int64.random(in: 1...(1 << 50))
        media.messaging.add(rae.id, to: conversation)
        media.messaging.add(sam.id, to: conversation)

        let outsider = await rpcError {
            _ = try await media.begin(tom, [1, 2, 3], type: "image/png", purpose: "message", conversation: conversation)
        }
        #expect(outsider?.reason == "forbidden")

        let png = MediaFixtures.png(width: 12, height: 12, seed: 90)
        let stored = try await media.upload(rae, png, type: "image/png", purpose: "message", conversation: conversation)
        #expect(stored.url.contains("?exp=") && stored.url.contains("&sig="))
        let signed = MediaStack.target(of: stored.url)
        let ok = try await HTTPProbe.get(port: media.adminPort, signed)
        #expect(ok.status == 200 && ok.body == png)
        #expect(ok.headers["cache-control"]?.hasPrefix("private") == true)

        let bare = "/media/\(stored.id)"
        let query = String(signed.split(separator: "?")[1])
        let fields = Dictionary(uniqueKeysWithValues: query.split(separator: "&").map {
            let pair = $0.split(separator: "=", maxSplits: 1)
            return (String(pair[0]), String(pair[1]))
        })
        let expiry = Int64(fields["exp"]!)!
        let signature = fields["sig"]!
        let flipped = (signature.first == "A" ? "B" : "A") + signature.dropFirst()
        for target in [
            bare, bare + "?exp=\(expiry)", bare + "?sig=\(signature)", bare + "?exp=\(expiry + 1)&sig=\(signature)",
            bare + "?exp=\(expiry)&sig=\(flipped)", bare + "?exp=100&sig=\(signature)",
        ] {
            let refused = try await HTTPProbe.get(port: media.adminPort, target)
            #expect(refused.status == 404, "\(target)")
        }
        // A signature of one medium does not open another.
        let other = try await media.upload(rae, MediaFixtures.png(width: 3, height: 3, seed: 91), type: "image/png", purpose: "message", conversation: conversation)
        let swapped = try await HTTPProbe.get(port: media.adminPort, "/media/\(other.id)?\(query)")
        #expect(swapped.status == 404)
        // Told apart from an id that does not exist by nothing but the id.
        // Not the next id: a test uploading meanwhile may be issued that one. Ids are milliseconds
        // shifted by 22 bits, so this one is about four minutes ahead of any issued now.
        let missingID = other.id.value + (1 << 40)
        let missing = try await HTTPProbe.get(port: media.adminPort, "/media/\(missingID)?\(query)")
        #expect(missing.status == 404 && missing.body == Array(swapped.body.replacing(Array("\(other.id)".utf8), with: Array("\(missingID)".utf8))))

        let readParams: [String: JSONValue] = ["mediaId": .string(stored.id.description), "offset": 0, "length": 8]
        let memberRead: [String: String] = try await media.stack.call("media", "media.read", readParams, as: sam)
        #expect(Data(base64Encoded: memberRead["data"] ?? "") == Data(png[0..<8]))
        let memberGet: Media = try await media.stack.call("media", "media.get", ["mediaId": .string(stored.id.description)], as: sam)
        #expect(memberGet.url.contains("sig="))
        let strangerRead = await rpcError {
            _ = try await media.stack.call("media", "media.read", readParams, as: tom, decoding: JSONValue.self)
        }
        #expect(strangerRead?.reason == "not_found")
        let anonymousRead = await rpcError {
            _ = try await media.stack.call("media", "media.read", readParams, decoding: JSONValue.self)
        }
        #expect(anonymousRead?.reason == "not_found" && anonymousRead?.message == strangerRead?.message)

        let inConversation: [Media] = try await media.stack.callInternal(
            "media", "media.getMany", ["ids": [.string(stored.id.description)], "conversationId": .string(String(conversation))])
        #expect(inConversation.count == 1 && inConversation[0].url.contains("sig="))
        let elsewhere: [Media] = try await media.stack.callInternal(
            "media", "media.getMany", ["ids": [.string(stored.id.description)], "conversationId": .string(String(conversation + 1))])
        #expect(elsewhere.isEmpty)
    }

    @Test("while the service secret rotates, an instance with the new one also accepts the old one: internal calls and signed URLs")
    func serviceSecretRotation() async throws {
        let media = try await MediaStack.shared()
        let ada = try await media.stack.makeUser("rot")
        let conversation = Int64.random(in: 1...(1 << 50))
        media.messaging.add(ada.id, to: conversation)
        let stored = try await media.upload(
            ada, MediaFixtures.png(width: 5, height: 5, seed: 97), type: "image/png", purpose: "message", conversation: conversation)
        let old = media.stack.serviceCredential
        let new = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let rotated = try await media.stack.startExtraInstance(
            "media", environment: ["AVIARY_SERVICE_SECRET": new, "AVIARY_SERVICE_SECRETS_ACCEPTED": old])
        let client = RPCClient(configuration: .init(addresses: [rotated.rpcAddress]), logger: .init(label: "rotated"))
        defer {
            rotated.terminate()
            Task { await client.shutdown() }
        }
        let params: [String: JSONValue] = ["ids": [.string(stored.id.description)], "conversationId": .string(String(conversation))]
        for credential in [old, new] {
            let found: [Media] = try await client.call("media.getMany", params: params, meta: RequestMeta(service: credential))
            #expect(found.map(\.id) == [stored.id])
        }
        for credential in [String(new.reversed()), old + new, ""] {
            let refused = await rpcError {
                _ = try await client.call("media.getMany", params: params, meta: RequestMeta(service: credential), as: JSONValue.self)
            }
            #expect(refused?.code == -32003, "credential '\(credential)'")
        }

        // The URL an instance with the old secret signed opens on the new one; the new one signs with
        // the new secret, which the old instance does not know.
        let signedBefore = MediaStack.target(of: stored.url)
        #expect(try await HTTPProbe.get(port: rotated.adminPort, signedBefore).status == 200)
        let fresh: [Media] = try await client.call("media.getMany", params: params, meta: RequestMeta(service: new))
        let signedAfter = MediaStack.target(of: fresh[0].url)
        #expect(signedAfter != signedBefore)
        #expect(try await HTTPProbe.get(port: rotated.adminPort, signedAfter).status == 200)
        #expect(try await HTTPProbe.get(port: media.adminPort, signedAfter).status == 404)
    }

    /// Messaging's errors are about media's call (its credential, its params), not the user's: a
    /// user whose read needs a membership check gets unavailable, not messaging's -32003 or -32022.
    @Test("a membership check that messaging refuses makes the read unavailable")
    func refusedMembershipCheck() async throws {
        let media = try await MediaStack.shared()
        let (wes, xia) = (try await media.stack.makeUser("wes"), try await media.stack.makeUser("xia"))
        let conversation = Int64.random(in: 1...(1 << 50))
        media.messaging.add(wes.id, to: conversation)
        let stored = try await media.upload(wes, MediaFixtures.png(width: 5, height: 5, seed: 97), type: "image/png", purpose: "message", conversation: conversation)
        let params: [String: JSONValue] = ["mediaId": .string(stored.id.description), "offset": 0, "length": 4]
        for refusal in [RPCError.forbidden("this method needs the service credential"), .validation("userId is not a user", field: "userId")] {
            media.messaging.fail(conversation, with: refusal)
            let read = await rpcError {
                _ = try await media.stack.call("media", "media.read", params, as: xia, decoding: JSONValue.self)
            }
            #expect(read?.reason == "unavailable", "\(refusal)")
        }
    }

    @Test("without a reachable messaging service, message uploads and reads by others are unavailable; public media is unaffected")
    func messagingOutage() async throws {
        let media = try await MediaStack.shared()
        let (uma, vic) = (try await media.stack.makeUser("uma"), try await media.stack.makeUser("vic"))
        let conversation = Int64.random(in: 1...(1 << 50))
        media.messaging.add(uma.id, to: conversation)
        let stored = try await media.upload(uma, MediaFixtures.png(width: 6, height: 6, seed: 95), type: "image/png", purpose: "message", conversation: conversation)
        let everyone = try await media.upload(uma, MediaFixtures.png(width: 6, height: 6, seed: 96), type: "image/png")

        let cutOff = try await media.stack.startExtraInstance(
            "media", environment: ["AVIARY_MESSAGING_ADDRESSES": "127.0.0.1:\(try freePort())"])
        let client = RPCClient(configuration: .init(addresses: [cutOff.rpcAddress]), logger: .init(label: "cut-off"))
        defer {
            cutOff.terminate()
            Task { await client.shutdown() }
        }
        let begin = await rpcError {
            _ = try await media.begin(uma, [1, 2, 3], type: "image/png", purpose: "message", conversation: conversation, on: client)
        }
        #expect(begin?.reason == "unavailable")
        let params: [String: JSONValue] = ["mediaId": .string(stored.id.description), "offset": 0, "length": 4]
        let read = await rpcError {
            _ = try await client.call("media.read", params: params, meta: RequestMeta(token: vic.token), as: JSONValue.self)
        }
        #expect(read?.reason == "unavailable")
        let own: JSONValue = try await client.call("media.read", params: params, meta: RequestMeta(token: uma.token))
        #expect(own["data"] != nil)
        let visible: Media = try await client.call("media.get", params: ["mediaId": JSONValue.string(everyone.id.description)])
        #expect(visible == everyone)
    }
}
