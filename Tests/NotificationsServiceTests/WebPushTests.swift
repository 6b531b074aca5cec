import AviaryAPI
import AviaryJSON
import Crypto
import Foundation
import NIOCore
import Postgres
@testable import NotificationsService
import RPC
import ServiceKit
import Testing
import TestSupport

/// Web Push through the real services: a follow's notification is encrypted, signed and POSTed to
/// a receiver here, which decrypts it with the subscriber's key; the receiver's answers delete the
/// subscription (410) or bring the push again (500). A stack of its own, whose notifications may
/// push to this machine (`AVIARY_PUSH_ALLOW_PRIVATE_ENDPOINTS`).
@Suite("Web Push", .serialized)
struct WebPushTests {
    /// Redis database 14: a stack flushes its database on start; 10 and 13 are the other suites'.
    static let stack = Task {
        try await ServiceStack.start(
            ["auth", "social-graph", "notifications"], redisDatabase: 14, environment: ["AVIARY_PUSH_ALLOW_PRIVATE_ENDPOINTS": "1"])
    }

    /// A subscriber's keys, as a browser makes them.
    struct Keys {
        let key = P256.KeyAgreement.PrivateKey()
        let auth = Data((0..<16).map { _ in UInt8.random(in: 0...255) })

        func params(_ endpoint: String) -> [String: JSONValue] {
            ["endpoint": .string(endpoint), "p256dh": .string(key.publicKey.x963Representation.base64URLEncoded),
             "auth": .string(auth.base64URLEncoded), "standard": true, "kinds": ["follow"]]
        }

        /// RFC 8291's decryption of an aes128gcm body.
        func open(_ body: [UInt8]) throws -> JSONValue {
            let data = Data(body)
            let salt = data.prefix(16)
            let senderLength = Int(data[20])
            let sender = try P256.KeyAgreement.PublicKey(x963Representation: data[21..<(21 + senderLength)])
            let shared = try key.sharedSecretFromKeyAgreement(with: sender)
            let info = Data("WebPush: info\0".utf8) + key.publicKey.x963Representation + sender.x963Representation
            let ikm = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: auth, sharedInfo: info, outputByteCount: 32)
            let cek = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: Data("Content-Encoding: aes128gcm\0".utf8), outputByteCount: 16)
            let nonce = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: Data("Content-Encoding: nonce\0".utf8), outputByteCount: 12)
            let record = data[(21 + senderLength)...]
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }), ciphertext: record.dropLast(16), tag: record.suffix(16))
            let plain = try AES.GCM.open(box, using: cek)
            #expect(plain.last == 2, "the last record's delimiter")
            return try JSONDecoder().decode(JSONValue.self, from: plain.dropLast())
        }
    }

    @Test("a follow's notification is pushed, encrypted to the session's key and signed; 410 deletes the subscription")
    func pushAndGone() async throws {
        let stack = try await Self.stack.value
        let receiver = try await PushReceiverServer.start()
        let (ida, joe) = (try await stack.makeUser("ida"), try await stack.makeUser("joe"))
        let keys = Keys()
        let made: JSONValue = try await stack.call("notifications", "notifications.setPush", keys.params(receiver.url("/ida")), as: ida)
        #expect(made["kinds"] == ["follow"] && made["standard"] == true && made["policy"] == "all", "\(made)")
        let serverKey = try #require(made["serverKey"]?.stringValue)

        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": ida.idValue], as: joe)
        #expect(await eventually(timeout: .seconds(15)) { !receiver.pushes(to: "/ida").isEmpty })
        let push = try #require(receiver.pushes(to: "/ida").first)
        let payload = try keys.open(push.body)
        #expect(payload["notification_type"] == "follow" && payload["title"]?.stringValue?.contains("followed you") == true, "\(payload)")
        #expect(push.headers["Content-Encoding"] == "aes128gcm" && push.headers["TTL"] != nil)
        // RFC 8292: `vapid t=<JWT>, k=<the server's key>`, the JWT signed by that key for the receiver's origin.
        let authorization = try #require(push.headers["Authorization"])
        let parts = authorization.dropFirst("vapid t=".count).components(separatedBy: ", k=")
        #expect(authorization.hasPrefix("vapid t=") && parts.count == 2 && parts[1] == serverKey, "\(authorization)")
        let jwt = parts[0].split(separator: ".")
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Data(base64URLEncoded: jwt[2])))
        let signer = try P256.Signing.PublicKey(x963Representation: try #require(Data(base64URLEncoded: serverKey)))
        #expect(signer.isValidSignature(signature, for: Data("\(jwt[0]).\(jwt[1])".utf8)))
        let claims = try JSONDecoder().decode(JSONValue.self, from: try #require(Data(base64URLEncoded: jwt[1])))
        #expect(claims["aud"]?.stringValue == "http://127.0.0.1:\(receiver.port)" && claims["sub"] != nil, "\(claims)")

        // The endpoint is gone: the next push deletes the subscription.
        receiver.answer("/ida", with: 410)
        let kim = try await stack.makeUser("kim")
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": ida.idValue], as: kim)
        #expect(await eventually(timeout: .seconds(15)) {
            await rpcError { let _: JSONValue = try await stack.call("notifications", "notifications.push", as: ida) }?.reason == "not_found"
        })
    }

    @Test("a push the service cannot take now is sent again; each session has its own subscription; kinds and policy")
    func retriesAndSessions() async throws {
        let stack = try await Self.stack.value
        let receiver = try await PushReceiverServer.start()
        let (lea, max) = (try await stack.makeUser("lea"), try await stack.makeUser("max"))
        let keys = Keys()
        receiver.answer("/lea", with: 503)
        let _: JSONValue = try await stack.call("notifications", "notifications.setPush", keys.params(receiver.url("/lea")), as: lea)
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": lea.idValue], as: max)
        // The first try at once, the next 2 s later.
        #expect(await eventually(timeout: .seconds(20)) { receiver.pushes(to: "/lea").count >= 2 })
        receiver.answer("/lea", with: 201)
        let again = try #require(receiver.pushes(to: "/lea").last)
        #expect(try keys.open(again.body)["notification_type"] == "follow")

        // Another session of lea's has none; her own reads, changes and deletes hers.
        struct Session: Decodable { var accessToken: String }
        let session = try await stack.client("auth").call(
            "auth.login", params: ["login": JSONValue.string(lea.username), "password": "correct horse battery"], as: Session.self)
        var other = lea
        other.token = session.accessToken
        #expect(await rpcError { let _: JSONValue = try await stack.call("notifications", "notifications.push", as: other) }?.reason == "not_found")
        // A session's end takes its subscription with it.
        let _: JSONValue = try await stack.call("notifications", "notifications.setPush", Keys().params(receiver.url("/other")), as: other)
        let _: JSONValue = try await stack.call("auth", "auth.logout", as: other)
        #expect(await eventually(timeout: .seconds(10)) {
            let rows = try? await stack.database.query(
                "SELECT count(*) FROM notifications.push_subscriptions WHERE endpoint = $1", [receiver.url("/other")])
            return (try? rows?[0].decode(Int64.self, at: 0)) == 0
        })
        let changed: JSONValue = try await stack.call("notifications", "notifications.updatePush", ["kinds": ["like", "mention"], "policy": "followed"], as: lea)
        #expect(changed["kinds"] == ["like", "mention"] && changed["policy"] == "followed")
        let _: JSONValue = try await stack.call("notifications", "notifications.deletePush", as: lea)
        let _: JSONValue = try await stack.call("notifications", "notifications.deletePush", as: lea)
        #expect(await rpcError { let _: JSONValue = try await stack.call("notifications", "notifications.push", as: lea) }?.reason == "not_found")
    }

    @Test("policy followed pushes only what users the subscriber follows do")
    func followedPolicy() async throws {
        let stack = try await Self.stack.value
        let receiver = try await PushReceiverServer.start()
        let (oli, pat, quin) = (try await stack.makeUser("oli"), try await stack.makeUser("pat"), try await stack.makeUser("quin"))
        let keys = Keys()
        var params = keys.params(receiver.url("/oli"))
        params["policy"] = "followed"
        let _: JSONValue = try await stack.call("notifications", "notifications.setPush", params, as: oli)
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": pat.idValue], as: oli)
        // quin, whom oli does not follow, follows first; then pat, whom oli follows.
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": oli.idValue], as: quin)
        let _: JSONValue = try await stack.call("social-graph", "graph.follow", ["userId": oli.idValue], as: pat)
        #expect(await eventually(timeout: .seconds(15)) { !receiver.pushes(to: "/oli").isEmpty })
        try await Task.sleep(for: .seconds(1))
        let pushes = receiver.pushes(to: "/oli")
        #expect(pushes.count == 1)
        #expect(try keys.open(try #require(pushes.first).body)["title"]?.stringValue?.contains("pat") == true)
    }

    @Test("bad subscriptions are refused naming the field; anonymous callers are refused")
    func refusals() async throws {
        let stack = try await Self.stack.value
        let ned = try await stack.makeUser("ned")
        let good = Keys().params("https://push.example.com/ned")
        func field(_ change: [String: JSONValue]) async -> String? {
            await rpcError {
                let _: JSONValue = try await stack.call("notifications", "notifications.setPush", good.merging(change) { _, new in new }, as: ned)
            }?.field
        }
        for endpoint in ["ftp://push.example.com/x", "https://user:secret@push.example.com/x", "https:///x", "not a url",
                         "https://push.example.com/" + String(repeating: "x", count: 2048)] {
            #expect(await field(["endpoint": .string(endpoint)]) == "endpoint", "\(endpoint)")
        }
        #expect(await field(["p256dh": "AAAA"]) == "p256dh")
        #expect(await field(["p256dh": .string(Data(repeating: 4, count: 65).base64URLEncoded)]) == "p256dh")  // not on the curve
        #expect(await field(["auth": .string(Data(count: 15).base64URLEncoded)]) == "auth")
        #expect(await field(["clientToken": .string(String(repeating: "t", count: 513))]) == "clientToken")
        #expect(await field(["policy": "everyone"]) == "policy")
        #expect(await field(["kinds": ["follow", "poke"]])?.hasPrefix("kinds") == true)
        #expect(await rpcError { let _: JSONValue = try await stack.call("notifications", "notifications.setPush", good) }?.reason == "unauthenticated")
    }

    @Test("no push goes to an internal address unless allowed: loopback, private, link-local, mapped, multicast")
    func internalAddresses() throws {
        for address in ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1",
                        "::1", "::", "fc00::1", "fe80::1", "::ffff:127.0.0.1", "ff02::1"] {
            #expect(PushSender.isInternal(try SocketAddress(ipAddress: address, port: 443)), "\(address)")
        }
        for address in ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "172.32.0.1", "100.128.0.1"] {
            #expect(!PushSender.isInternal(try SocketAddress(ipAddress: address, port: 443)), "\(address)")
        }
        #expect(throws: RPCError.self) { try PushEndpoint("http://push.example.com/x", allowPrivate: false) }
        for given in ["https://127.0.0.1/x", "https://[::1]:8443/x", "https://169.254.169.254/latest", "https://10.0.0.7/"] {
            #expect(throws: RPCError.self, "\(given)") { try PushEndpoint(given, allowPrivate: false) }
            #expect((try? PushEndpoint(given, allowPrivate: true)) != nil, "\(given)")
        }
        let endpoint = try PushEndpoint("https://push.example.com:8443/send/abc?x=1", allowPrivate: false)
        #expect(endpoint.origin == "https://push.example.com:8443" && endpoint.target == "/send/abc?x=1" && endpoint.tls)
    }
}
