import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import NIOCore
import NIOPosix
import NIOWebSocket
import RPC
import Redis
import Synchronization
import TestSupport
import Testing
import WSClient

/// The public edge end to end: the real gateway in front of the real seven services, driven with
/// Foundation's URLSession and swift-websocket's client as an app would.
@Suite("Gateway", .serialized)
struct GatewayTests {
    @Test("POST /rpc: a call with the token in Authorization, a batch, notifications only, discovery")
    func httpCalls() async throws {
        let edge = try await GatewayStack.shared()
        let alice = try await edge.register("alice")
        let created = try await EdgeHTTP.rpc(edge.url, "tweets.create", ["text": "hello through the edge #gateway"], token: alice.token)
        let tweetID = try #require(created["result"]?["id"]?.stringValue, "\(created)")
        // The token may come in _meta.token too.
        let got = try await EdgeHTTP.rpc(edge.url, "tweets.get", ["tweetId": .string(tweetID), "_meta": ["token": .string(alice.token)]])
        #expect(got["result"]?["text"]?.stringValue == "hello through the edge #gateway")

        let batch = #"[{"jsonrpc":"2.0","id":"a","method":"auth.me","params":{}},{"jsonrpc":"2.0","id":"b","method":"nope.nothing"}]"#
        let reply = try await EdgeHTTP.send(
            "POST", edge.url + "/rpc", body: Data(batch.utf8),
            headers: ["Authorization": "Bearer \(alice.token)", "Content-Type": "application/json"])
        #expect(reply.status == 200)
        let answers = try #require(reply.json.arrayValue)
        #expect(answers.count == 2)
        #expect(answers.first { $0["id"] == "a" }?["result"]?["username"]?.stringValue == alice.username)
        #expect(answers.first { $0["id"] == "b" }?["error"]?["code"]?.intValue == -32601)
        #expect(reply.header("RateLimit-Remaining") != nil)

        let notification = try await EdgeHTTP.send(
            "POST", edge.url + "/rpc", body: Data(#"{"jsonrpc":"2.0","method":"auth.me","params":{}}"#.utf8))
        #expect(notification.status == 204)

        let discover = try await EdgeHTTP.send("GET", edge.url + "/rpc/discover")
        let names = Set(discover.json["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? [])
        #expect(names.contains("tweets.create") && names.contains("timeline.home") && names.contains("media.beginUpload"))
        #expect(!names.contains("graph.followerIds") && !names.contains("auth.getUsers") && !names.contains("tweets.getMany"))
        let openAPI = try await EdgeHTTP.send("GET", edge.url + "/openapi.json")
        #expect(openAPI.json["openapi"]?.stringValue == "3.1.0")
        #expect(openAPI.json["paths"]?["/rpc"] != nil)
        #expect(openAPI.header("X-Content-Type-Options") == "nosniff")
    }

    @Test("internal methods are not found at the edge, whatever credential the caller sends")
    func internalMethodsRefused() async throws {
        let edge = try await GatewayStack.shared()
        let alice = try await edge.register("intern")
        for (method, params) in [
            ("graph.followerIds", ["userId": JSONValue.string(alice.id)]), ("auth.getUsers", ["ids": [.string(alice.id)]]),
            ("tweets.getMany", ["ids": []]), ("media.getMany", ["ids": []]),
        ] {
            var forged = params
            forged["_meta"] = ["service": .string(edge.stack.serviceCredential), "clientAddress": "203.0.113.1"]
            let answer = try await EdgeHTTP.rpc(edge.url, method, forged, token: alice.token)
            #expect(answer["error"]?["code"]?.intValue == -32601, "\(method): \(answer)")
        }
        // The gateway's own method exists only on a WebSocket.
        let authenticate = try await EdgeHTTP.rpc(edge.url, "gateway.authenticate", ["token": .string(alice.token)])
        #expect(authenticate["error"]?["code"]?.intValue == -32601)
        // A subscription needs the socket it pushes on.
        let subscribe = try await EdgeHTTP.rpc(edge.url, "notifications.subscribe", token: alice.token)
        #expect(subscribe["error"]?["code"]?.intValue == -32600)
        // A method given twice is no method: the edge would route one and the service run another.
        let twice = try await EdgeHTTP.send(
            "POST", edge.url + "/rpc", body: Data(#"{"jsonrpc":"2.0","id":1,"method":"tweets.get","method":"tweets.getMany","params":{"ids":[]}}"#.utf8),
            headers: ["Authorization": "Bearer \(alice.token)", "Content-Type": "application/json"])
        #expect(twice.json["error"]?["code"]?.intValue == -32600)
        #expect(twice.json["error"]?["message"]?.stringValue == "invalid request: 'method' is given twice")
    }

    @Test("what is not JSON-RPC gets an HTTP status and a JSON body")
    func httpRefusals() async throws {
        let edge = try await GatewayStack.shared()
        let notJSON = try await EdgeHTTP.send("POST", edge.url + "/rpc", body: Data("{not json".utf8))
        #expect(notJSON.status == 400)
        #expect(notJSON.json["error"]?["code"]?.intValue == -32700)
        let put = try await EdgeHTTP.send("PUT", edge.url + "/rpc", body: Data("{}".utf8))
        #expect(put.status == 405)
        #expect(put.header("Allow") == "GET, POST")
        let large = try await EdgeHTTP.send("POST", edge.url + "/rpc", body: Data(repeating: UInt8(ascii: " "), count: (1 << 20) + 1))
        #expect(large.status == 413)
        #expect(large.json["error"]?["message"]?.stringValue?.contains("1048576") == true)
        let unknown = try await EdgeHTTP.send("GET", edge.url + "/nothing-here")
        #expect(unknown.status == 404)
        let noToken = try await EdgeHTTP.send("POST", edge.url + "/media?purpose=tweet", body: Data([1, 2, 3]), headers: ["Content-Type": "image/png"])
        #expect(noToken.status == 401)
        #expect(noToken.json["error"]?["data"]?["reason"]?.stringValue == "unauthenticated")
    }

    @Test("a WebSocket session follows, posts, and gets the notification and a direct message live")
    func webSocketSession() async throws {
        let edge = try await GatewayStack.shared()
        let alice = try await edge.register("alice")
        let bob = try await edge.register("bob")
        let socket = try await TestSocket.open(edge.url, token: alice.token)
        defer { Task { await socket.close() } }

        let subscribed = try await socket.call("notifications.subscribe")
        #expect(subscribed["result"]?["subscription"]?.stringValue != nil, "\(subscribed)")
        let chat = try await socket.call("messaging.subscribe")
        #expect(chat["result"]?["subscription"]?.stringValue != nil, "\(chat)")
        // Calls in flight at once on one socket.
        async let me = socket.call("auth.me")
        async let follow = socket.call("graph.follow", ["userId": .string(bob.id)])
        async let post = socket.call("tweets.create", ["text": "posted on a socket"])
        #expect(try await me["result"]?["id"]?.stringValue == alice.id)
        #expect(try await follow["result"]?["following"]?.boolValue == true)
        #expect(try await post["result"]?["text"]?.stringValue == "posted on a socket")

        // Bob follows Alice over HTTP: Alice's socket gets the notification.
        _ = try await EdgeHTTP.rpc(edge.url, "graph.follow", ["userId": .string(alice.id)], token: bob.token)
        let notified = await socket.event("notifications.event") { params in
            "\(params)".contains(bob.id)
        }
        #expect(notified != nil, "no notification among \(socket.messages)")

        // Bob writes to Alice: the message arrives on the same socket.
        let direct = try await EdgeHTTP.rpc(edge.url, "messaging.openDirect", ["userId": .string(alice.id)], token: bob.token)
        let conversation = try #require(direct["result"]?["id"]?.stringValue, "\(direct)")
        _ = try await EdgeHTTP.rpc(
            edge.url, "messaging.send", ["conversationId": .string(conversation), "text": "hi Alice"], token: bob.token)
        let message = await socket.event("messaging.event") { "\($0)".contains("hi Alice") }
        #expect(message != nil, "no message among \(socket.messages)")

        // The token is refreshed on the socket without reconnecting.
        let again = try await socket.call("gateway.authenticate", ["token": .string(alice.token)])
        #expect(again["result"]?["userId"]?.stringValue == alice.id)
        let other = try await socket.call("gateway.authenticate", ["token": .string(bob.token)])
        #expect(other["error"]?["data"]?["reason"]?.stringValue == "forbidden")
    }

    @Test("a subscription's catch-up, pushed right behind its answer, reaches the socket after the answer")
    func catchUpFollowsTheAnswer() async throws {
        let edge = try await GatewayStack.shared()
        let (alice, bob) = (try await edge.register("alice"), try await edge.register("bob"))
        for index in 0..<20 {
            _ = try await EdgeHTTP.rpc(edge.url, "tweets.create", ["text": .string("@\(alice.username) \(index)")], token: bob.token)
        }
        #expect(await eventually {
            let page = try? await EdgeHTTP.rpc(edge.url, "notifications.list", ["limit": 50], token: alice.token)
            return page?["result"]?["items"]?.arrayValue?.count == 20
        })
        let socket = try await TestSocket.open(edge.url, token: alice.token)
        defer { Task { await socket.close() } }
        // An app learns a subscription's name from the answer: an event before it has nowhere to go.
        // In a batch, the answer waits for every call: with 99 other calls beside it, the
        // subscription's catch-up is usually done before.
        let subscribe: JSONValue = ["jsonrpc": "2.0", "id": 0, "method": "notifications.subscribe", "params": ["lastId": "1"]]
        let others = (1..<RPCRouter.maxBatchLength).map { id -> JSONValue in
            ["jsonrpc": "2.0", "id": .int(Int64(id)), "method": "auth.me"]
        }
        try await socket.send(String(decoding: try JSONEncoder().encode(JSONValue.array([subscribe] + others)), as: UTF8.self))
        #expect(await eventually(timeout: .seconds(30)) {
            let messages = socket.messages
            return messages.contains { $0.arrayValue != nil } && messages.count { $0["method"]?.stringValue == "notifications.event" } == 20
        })
        let answer = try #require(socket.messages.firstIndex { $0.arrayValue != nil }, "no answer among \(socket.messages)")
        let name = try #require(socket.messages[answer].arrayValue?.first { $0["id"] == 0 }?["result"]?["subscription"]?.stringValue)
        let first = socket.messages.firstIndex { $0["params"]?["subscription"]?.stringValue == name }
        #expect(first.map { $0 > answer } == true, "events before the answer: \(socket.messages)")
        // Live events go straight through after it.
        _ = try await EdgeHTTP.rpc(edge.url, "tweets.create", ["text": .string("@\(alice.username) a live mention")], token: bob.token)
        #expect(await socket.event("notifications.event") { "\($0)".contains("a live mention") } != nil)
    }

    @Test("sockets' subscriptions share the gateway's connections, reach only their socket and end with it")
    func sharedSubscriptions() async throws {
        let edge = try await GatewayStack.shared()
        try await SubscriptionTurns.exclusive(edge) { try await countedSubscriptions(edge) }
    }

    private func countedSubscriptions(_ edge: GatewayStack) async throws {
        let (alice, bob, carol) = (try await edge.register("alice"), try await edge.register("bob"), try await edge.register("carol"))
        let notifications = edge.stack.processes("notifications")
        let active = { notifications.reduce(0) { $0 + ((try? $1.metric("aviary_subscriptions_active")) ?? -1) } }
        let before = active()
        let aliceSocket = try await TestSocket.open(edge.url, token: alice.token)
        let bobSocket = try await TestSocket.open(edge.url, token: bob.token)
        defer { Task { await bobSocket.close() } }
        let aliceSub = try #require(try await aliceSocket.call("notifications.subscribe")["result"]?["subscription"]?.stringValue)
        let bobSub = try #require(try await bobSocket.call("notifications.subscribe")["result"]?["subscription"]?.stringValue)
        #expect(aliceSub != bobSub)
        #expect(await eventually { active() == before + 2 })

        _ = try await EdgeHTTP.rpc(edge.url, "graph.follow", ["userId": .string(alice.id)], token: carol.token)
        let event = await aliceSocket.event("notifications.event") { "\($0)".contains(carol.id) }
        #expect(event?["params"]?["subscription"]?.stringValue == aliceSub)
        try await Task.sleep(for: .milliseconds(300))
        #expect(!bobSocket.messages.contains { "\($0)".contains(carol.id) }, "bob's socket got alice's event")

        // A socket cannot end another socket's subscription.
        let foreign = try await bobSocket.call("notifications.unsubscribe", ["subscription": .string(aliceSub)])
        #expect(foreign["error"]?["data"]?["reason"]?.stringValue == "not_found")
        // Closing a socket ends its subscriptions at the service; unsubscribing ends one.
        await aliceSocket.close()
        #expect(await eventually { active() == before + 1 }, "active: \(active()), before: \(before)")
        let ended = try await bobSocket.call("notifications.unsubscribe", ["subscription": .string(bobSub)])
        #expect(ended["error"] == nil, "\(ended)")
        #expect(await eventually { active() == before }, "active: \(active()), before: \(before)")
    }

    @Test("a socket may sign in with its first message; internal methods are refused there too")
    func webSocketFirstMessage() async throws {
        let edge = try await GatewayStack.shared()
        let carol = try await edge.register("carol")
        let socket = try await TestSocket.open(edge.url)
        defer { Task { await socket.close() } }
        let anonymous = try await socket.call("auth.me")
        #expect(anonymous["error"]?["code"]?.intValue == -32001)
        let signedIn = try await socket.call("gateway.authenticate", ["token": .string(carol.token)])
        #expect(signedIn["result"]?["userId"]?.stringValue == carol.id)
        let me = try await socket.call("auth.me")
        #expect(me["result"]?["username"]?.stringValue == carol.username)
        let forged = try await socket.call(
            "graph.followerIds", ["userId": .string(carol.id), "_meta": ["service": .string(edge.stack.serviceCredential)]])
        #expect(forged["error"]?["code"]?.intValue == -32601)
        let forgedToken = try await socket.call("gateway.authenticate", ["token": "not.a.token"])
        #expect(forgedToken["error"]?["code"]?.intValue == -32001)
    }

    @Test("a message over the socket's limit closes it with 1009")
    func oversizeMessage() async throws {
        let edge = try await GatewayStack.shared()
        let socket = try await TestSocket.open(edge.url)
        try await socket.send(String(repeating: " ", count: (1 << 20) + 10))
        let closing = await socket.closing()
        #expect(closing != nil, "the socket stayed open")
        #expect(closing??.closeCode == .messageTooLarge, "\(String(describing: closing))")
    }

    @Test("a socket's frames: a message in fragments, a binary one refused, pings answered, the closing handshake")
    func socketFrames() async throws {
        let edge = try await GatewayStack.shared()
        let port = try #require(URLComponents(string: edge.url)?.port)
        let socket = try await RawSocket.upgrade(port: port)
        defer { Task { await socket.close() } }
        #expect(try await socket.response().status == 101)
        let call = Array(#"{"jsonrpc":"2.0","id":7,"method":"auth.me"}"#.utf8)
        try await socket.send(opcode: 0x1, fin: false, Array(call[..<10]))
        try await socket.send(opcode: 0x0, fin: false, Array(call[10..<20]))
        // A ping between a message's fragments is answered at once.
        try await socket.send(opcode: 0x9, "between")
        try await socket.send(opcode: 0x0, Array(call[20...]))
        let pong = try await socket.next()
        #expect(pong.opcode == 0xA && pong.text == "between", "\(pong)")
        let answer = try await socket.next()
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(answer.payload))
        #expect(answer.opcode == 0x1 && json["id"]?.intValue == 7 && json["error"]?["code"]?.intValue == -32001, "\(answer.text)")
        try await socket.send(opcode: 0x2, [1, 2, 3])
        let binary = try JSONDecoder().decode(JSONValue.self, from: Data(try await socket.next().payload))
        #expect(binary["error"]?["code"]?.intValue == -32600, "\(binary)")
        // The client's close is echoed with its code, and the gateway closes the connection.
        try await socket.send(opcode: 0x8, [0x03, 0xE8])
        #expect(try await socket.next().closeCode == 1000)
        #expect(await socket.closed())

        // Text that is not UTF-8 closes the socket with 1007.
        let garbled = try await RawSocket.upgrade(port: port)
        defer { Task { await garbled.close() } }
        #expect(try await garbled.response().status == 101)
        try await garbled.send(opcode: 0x1, [0x7b, 0xff, 0xfe, 0x7d])
        #expect(try await garbled.next().closeCode == 1007)
    }

    @Test("a refused upgrade says why: its status and a JSON body; GET /rpc without one is told to upgrade")
    func refusedUpgrades() async throws {
        let edge = try await GatewayStack.shared()
        let port = try #require(URLComponents(string: edge.url)?.port)
        let forged = try await RawSocket.upgrade(port: port, headers: ["Authorization": "Bearer not.a.token"])
        let unauthorized = try await forged.response()
        #expect(unauthorized.status == 401 && unauthorized.rest.contains("the access token in Authorization is not valid"))
        let elsewhere = try await RawSocket.upgrade(port: port, path: "/elsewhere")
        #expect(try await elsewhere.response().status == 404)
        let plain = try await EdgeHTTP.send("GET", edge.url + "/rpc")
        #expect(plain.status == 426 && plain.header("Upgrade") == "websocket")
        #expect(plain.json["error"]?["message"]?.stringValue?.contains("WebSocket") == true)
        // Upgrades NIO could not complete are answered too, not hung up on.
        for (headers, status, reason) in [
            ("Sec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13", 400, "Sec-WebSocket-Key"),
            ("Sec-WebSocket-Version: 13", 400, "Sec-WebSocket-Key"),
            ("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8", 400, "Sec-WebSocket-Version: 13"),
        ] {
            let answer = try await Self.rawExchange(
                port: port, "GET /rpc HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\(headers)\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 \(status)") && answer.contains(reason), "\(headers): \(answer)")
        }
        let other = try await Self.rawExchange(port: port, "GET /rpc HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n")
        #expect(other.hasPrefix("HTTP/1.1 426"), "\(other)")
    }

    /// Sends `request` on a new connection and returns what comes back before the gateway closes
    /// it (or a second passes).
    private static func rawExchange(port: Int, _ request: String) async throws -> String {
        let reply = try TCPExchange.run(host: "127.0.0.1", port: port, request: Array(request.utf8), timeout: .seconds(2)) { bytes in
            bytes.count > 4 && String(decoding: bytes, as: UTF8.self).contains("\r\n\r\n{")
                && String(decoding: bytes, as: UTF8.self).hasSuffix("}")
        }
        return String(decoding: reply, as: UTF8.self)
    }

    @Test("a gateway shutting down closes its sockets with 1001, so apps reconnect to another")
    func shutdownClosesSockets() async throws {
        let edge = try await GatewayStack.shared()
        let leaving = try await edge.extraGateway([:])
        defer { leaving.process.kill() }
        let socket = try await TestSocket.open(leaving.url)
        leaving.process.terminate()
        let closing = await socket.closing()
        #expect(closing??.closeCode == .goingAway, "\(String(describing: closing))")
        #expect(await leaving.process.waitForExit() != nil)
    }

    @Test("a client that sends calls but never reads its answers is hung up on, not buffered for")
    func clientThatDoesNotRead() async throws {
        let edge = try await GatewayStack.shared()
        let port = try #require(URLComponents(string: edge.url)?.port)
        // A raw socket that never reads (autoRead off): the gateway's writes stall once the kernel's
        // buffers are full, and its answers (the merged discovery document, tens of kilobytes each)
        // pile up until they pass the socket's 8 MiB.
        // From an address of its own, so that its calls spend none of the other tests' limit.
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.autoRead, value: false)
            .bind(to: try SocketAddress(ipAddress: "127.0.0.2", port: 0))
            .connect(host: "127.0.0.1", port: port).get()
        let upgrade = "GET /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try await channel.writeAndFlush(ByteBuffer(string: upgrade))
        // 300 answers of about 60 KB: more than the kernel's buffers and the socket's 8 MiB hold.
        for n in 0..<300 {
            try await channel.writeAndFlush(RawSocket.maskedFrame(opcode: 0x1, Array(#"{"jsonrpc":"2.0","id":\#(n),"method":"rpc.discover"}"#.utf8)))
        }
        // Pings (no calls, so no rate limit spent) until a write fails: the gateway hung up.
        var hungUp = false
        let deadline = ContinuousClock.now + .seconds(60)
        while !hungUp, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            do {
                try await channel.writeAndFlush(RawSocket.maskedFrame(opcode: 0x9, []))
            } catch {
                hungUp = true
            }
        }
        #expect(hungUp, "the socket stayed open with its answers unread")
        try? await channel.close()
        // The gateway is well and serves others.
        let discovery = try await EdgeHTTP.send("GET", edge.url + "/rpc/discover")
        #expect(discovery.status == 200)
    }

    @Test("media uploads over HTTP: an image and a 20 MiB video, streamed in chunks")
    func uploads() async throws {
        let edge = try await GatewayStack.shared()
        let dave = try await edge.register("dave")
        let png = MediaFixtures.png(width: 40, height: 30)
        let image = try await EdgeHTTP.send(
            "POST", edge.url + "/media?purpose=tweet", body: Data(png),
            headers: ["Authorization": "Bearer \(dave.token)", "Content-Type": "image/png"])
        #expect(image.status == 201, "\(String(decoding: image.body, as: UTF8.self))")
        #expect(image.json["width"]?.intValue == 40 && image.json["byteSize"]?.intValue == Int64(png.count))

        let movie = MediaFixtures.movie(durationMs: 4000, width: 640, height: 360, payload: 20 << 20)
        let video = try await EdgeHTTP.send(
            "POST", edge.url + "/media?purpose=tweet", body: Data(movie),
            headers: ["Authorization": "Bearer \(dave.token)", "Content-Type": "video/mp4"])
        #expect(video.status == 201, "\(String(decoding: video.body, as: UTF8.self))")
        #expect(video.json["byteSize"]?.intValue == Int64(movie.count) && video.json["durationMs"]?.intValue == 4000)
        let id = try #require(video.json["id"]?.stringValue)

        // multipart/form-data, as a browser's form sends it: another field first, then the file.
        let boundary = "----aviary\(UInt32.random(in: 0...UInt32.max))"
        var form = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"caption\"\r\n\r\na cat\r\n".utf8)
        form += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cat.png\"\r\n".utf8)
        form += Data("Content-Type: image/png\r\n\r\n".utf8) + Data(png) + Data("\r\n--\(boundary)--\r\n".utf8)
        let multipart = try await EdgeHTTP.send(
            "POST", edge.url + "/media?purpose=avatar", body: form,
            headers: ["Authorization": "Bearer \(dave.token)", "Content-Type": "multipart/form-data; boundary=\(boundary)"])
        #expect(multipart.status == 201, "\(String(decoding: multipart.body, as: UTF8.self))")
        #expect(multipart.json["byteSize"]?.intValue == Int64(png.count) && multipart.json["height"]?.intValue == 30)
        let noFile = try await EdgeHTTP.send(
            "POST", edge.url + "/media?purpose=avatar",
            body: Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--\(boundary)--\r\n".utf8),
            headers: ["Authorization": "Bearer \(dave.token)", "Content-Type": "multipart/form-data; boundary=\(boundary)"])
        #expect(noFile.status == 400)

        let redirect = try await EdgeHTTP.send("GET", edge.url + "/media/\(id)?x=1")
        #expect(redirect.status == 307)
        #expect(redirect.header("Location")?.hasSuffix("/media/\(id)?x=1") == true)

        let wrongType = try await EdgeHTTP.send(
            "POST", edge.url + "/media?purpose=tweet", body: Data(png),
            headers: ["Authorization": "Bearer \(dave.token)", "Content-Type": "video/mp4"])
        #expect(wrongType.status == 422, "\(String(decoding: wrongType.body, as: UTF8.self))")
        let noPurpose = try await EdgeHTTP.send(
            "POST", edge.url + "/media", body: Data(png),
            headers: ["Authorization": "Bearer \(dave.token)", "Content-Type": "image/png"])
        #expect(noPurpose.status == 422)
        #expect(noPurpose.json["error"]?["data"]?["field"]?.stringValue == "purpose")
    }

    @Test("limits: calls per address with RateLimit headers, sockets per user and per address, believed proxies only")
    func limits() async throws {
        let edge = try await GatewayStack.shared()
        let erin = try await edge.register("erin")
        // Its calls come from an address of their own, named by a proxy it trusts: the stack's
        // gateway counts every other test's calls from 127.0.0.1 in that address's bucket, which
        // all gateways of a deployment share.
        let limited = try await edge.extraGateway([
            "AVIARY_GATEWAY_CALLS_PER_ADDRESS_PER_MINUTE": "3", "AVIARY_GATEWAY_SOCKETS_PER_USER": "1",
            "AVIARY_GATEWAY_TRUSTED_PROXIES": "127.0.0.0/8",
        ])
        defer { limited.process.kill() }
        let address = "198.51.100.\(Int.random(in: 2...254))"
        var statuses: [Int] = []
        var last: EdgeHTTP.Reply?
        for _ in 0..<4 {
            let reply = try await EdgeHTTP.post(limited.url, "auth.me", token: erin.token, headers: ["X-Forwarded-For": address])
            statuses.append(reply.status)
            last = reply
        }
        #expect(statuses == [200, 200, 200, 429])
        let refused = try #require(last)
        #expect(refused.header("Retry-After").flatMap(Int.init).map { $0 >= 1 } == true)
        #expect(refused.header("RateLimit-Limit") == "3" && refused.header("RateLimit-Remaining") == "0")
        #expect(refused.json["error"]?["code"]?.intValue == -32029)

        let sockets = try await edge.extraGateway(["AVIARY_GATEWAY_SOCKETS_PER_USER": "1"])
        defer { sockets.process.kill() }
        let ofErin = await TestSocket.openAtOnce(3, sockets.url, token: erin.token)
        #expect(ofErin.open.count == 1 && ofErin.refused + ofErin.closed.count == 2, "\(ofErin)")
        #expect(ofErin.closed.allSatisfy { $0 == .policyViolation }, "a socket past one user's limit stayed open: \(ofErin.closed)")
        let first = try #require(ofErin.open.first)
        // Once one is counted, the next is refused at the upgrade.
        let socketsPort = try #require(URLComponents(string: sockets.url)?.port)
        let second = try await RawSocket.upgrade(port: socketsPort, headers: ["Authorization": "Bearer \(erin.token)"]).response()
        #expect(second.status == 429 && second.rest.contains("Retry-After: 1"), "\(second)")
        await first.close()
        // Once the first socket is closed, the user may open another.
        #expect(await eventually { (try? await TestSocket.open(sockets.url, token: erin.token)).map { _ in true } ?? false })

        // Sockets per address count anonymous ones too.
        let crowd = try await edge.extraGateway(["AVIARY_GATEWAY_SOCKETS_PER_ADDRESS": "2"])
        defer { crowd.process.kill() }
        let fromOne = await TestSocket.openAtOnce(3, crowd.url)
        #expect(fromOne.refused + fromOne.closed.count == 1, "\(fromOne)")
        #expect(fromOne.closed.allSatisfy { $0 == .policyViolation }, "a third socket from one address stayed open: \(fromOne.closed)")
        try #require(fromOne.open.count == 2)
        let (one, two) = (fromOne.open[0], fromOne.open[1])
        // Once two are counted, the next is refused at the upgrade.
        let crowdPort = try #require(URLComponents(string: crowd.url)?.port)
        let third = try await RawSocket.upgrade(port: crowdPort).response()
        #expect(third.status == 429 && third.rest.contains("Retry-After: 1"), "\(third)")
        await one.close()
        #expect(await eventually { (try? await TestSocket.open(crowd.url)).map { _ in true } ?? false })
        await two.close()

        // X-Forwarded-For is believed only from a trusted proxy: the buckets show which address counted.
        let spoof = "203.0.113.77"
        _ = try await EdgeHTTP.post(edge.url, "auth.me", token: erin.token, headers: ["X-Forwarded-For": spoof])
        #expect(try await edge.stack.redis.send(["EXISTS", RedisArgument("aviary:rate:gateway:address:\(spoof)")]).int == 0)
        let trusting = try await edge.extraGateway(["AVIARY_GATEWAY_TRUSTED_PROXIES": "127.0.0.0/8"])
        defer { trusting.process.kill() }
        _ = try await EdgeHTTP.post(trusting.url, "auth.me", token: erin.token, headers: ["X-Forwarded-For": "198.51.100.1, \(spoof)"])
        #expect(try await edge.stack.redis.send(["EXISTS", RedisArgument("aviary:rate:gateway:address:\(spoof)")]).int == 1)
        #expect(try await edge.stack.redis.send(["EXISTS", "aviary:rate:gateway:address:198.51.100.1"]).int == 0)
    }

    @Test("auth's per-address limits count the address the gateway names, and only the gateway may name one")
    func clientAddressReachesAuth() async throws {
        let edge = try await GatewayStack.shared()
        let trusting = try await edge.extraGateway(["AVIARY_GATEWAY_TRUSTED_PROXIES": "127.0.0.1"])
        defer { trusting.process.kill() }
        _ = try await edge.register("frank", through: trusting.url)
        let keys = { (key: String) async throws -> Int in
            try await edge.stack.redis.send(["EXISTS", RedisArgument(key)]).int ?? 0
        }
        // Through the gateway with no forwarding header: the socket's peer (127.0.0.1) counts.
        #expect(try await keys("aviary:rate:auth:register:address:127.0.0.1") == 1)
        _ = try await edge.register("grace", through: trusting.url, forwardedFor: "192.0.2.44")
        #expect(try await keys("aviary:rate:auth:register:address:192.0.2.44") == 1)
        // A caller without the service credential cannot name an address.
        _ = try await edge.stack.client("auth").send(
            "auth.login", params: try RawJSON(encoding: ["login": "nobody_here", "password": "whatever it is"]),
            meta: RequestMeta(clientAddress: "192.0.2.99"))
        #expect(try await keys("aviary:rate:auth:login:address:192.0.2.99") == 0)
    }

    @Test("CORS answers configured origins only; security headers on every answer")
    func cors() async throws {
        let edge = try await GatewayStack.shared()
        let browser = try await edge.extraGateway(["AVIARY_GATEWAY_CORS_ORIGINS": "https://app.example"])
        defer { browser.process.kill() }
        let preflight = try await EdgeHTTP.send(
            "OPTIONS", browser.url + "/rpc",
            headers: ["Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                      "Access-Control-Request-Headers": "authorization, content-type"])
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Origin") == "https://app.example")
        #expect(preflight.header("Access-Control-Allow-Headers")?.contains("Authorization") == true)
        let call = try await EdgeHTTP.post(browser.url, "auth.getUser", ["username": "nobody_here"], headers: ["Origin": "https://app.example"])
        #expect(call.header("Access-Control-Allow-Origin") == "https://app.example")
        #expect(call.header("Access-Control-Expose-Headers")?.contains("RateLimit-Remaining") == true)
        let stranger = try await EdgeHTTP.post(browser.url, "auth.getUser", ["username": "nobody_here"], headers: ["Origin": "https://evil.example"])
        #expect(stranger.header("Access-Control-Allow-Origin") == nil)
        #expect(stranger.header("X-Frame-Options") == "DENY" && stranger.header("Cache-Control") == "no-store")
    }

    @Test("with a certificate and key the public port speaks TLS, WebSockets included")
    func tls() async throws {
        let edge = try await GatewayStack.shared()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("aviary-gateway-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (certificate, key) = (folder.appendingPathComponent("cert.pem").path, folder.appendingPathComponent("key.pem").path)
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", certificate,
        ]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        #expect(openssl.terminationStatus == 0)
        let secure = try await edge.extraGateway(["AVIARY_GATEWAY_TLS_CERT": certificate, "AVIARY_GATEWAY_TLS_KEY": key])
        defer { secure.process.kill() }
        let socket = try await TestSocket.open(secure.url, tls: true)
        defer { Task { await socket.close() } }
        let discover = try await socket.call("rpc.discover")
        #expect(discover["result"]?["methods"]?.arrayValue?.isEmpty == false)
        // Plain HTTP to the TLS port gets no answer in JSON.
        #expect((try? await EdgeHTTP.send("GET", secure.url + "/openapi.json"))?.status != 200)
    }
}

/// Two gateways behind one address, as behind a load balancer.
@Suite("Gateway failover", .serialized)
struct GatewayFailoverTests {
    private struct Outcome: Sendable {
        var tweetID: String?
        var failure: String?
        var started: ContinuousClock.Instant
        var ended: ContinuousClock.Instant
    }

    /// What the load's workers and the killer share.
    private final class LoadRun: Sendable {
        let outcomes = Locked<[Outcome]>([])
        let killedAt = Locked<ContinuousClock.Instant?>(nil)
        let next = Atomic<Int>(0)
    }

    @Test("killing one of two gateways under load loses only the calls in flight on it")
    func killOneUnderLoad() async throws {
        let edge = try await GatewayStack.shared()
        let author = try await edge.register("load")
        let (a, b) = (try await edge.extraGateway([:]), try await edge.extraGateway([:]))
        defer {
            a.process.kill()
            b.process.kill()
        }
        let port = { (url: String) in Int(url.split(separator: ":").last ?? "") ?? 0 }
        let proxy = try TCPProxy(targetPorts: [port(a.url), port(b.url)])
        defer { proxy.close() }

        let run = LoadRun()
        let calls = 600
        // Eight blocking clients on threads of their own (not the tasks' pool, which they would
        // hold), each call on a connection of its own, so that every call goes through the
        // balancer's choice.
        let finished = DispatchGroup()
        for _ in 0..<8 {
            finished.enter()
            Thread.detachNewThread {
                defer { finished.leave() }
                while true {
                    let index = run.next.add(1, ordering: .relaxed).oldValue
                    guard index < calls else { return }
                    let request = #"{"jsonrpc":"2.0","id":1,"method":"tweets.create","params":{"text":"call \#(index)","idempotencyKey":"failover-\#(index)-\#(author.id)"}}"#
                    let started = ContinuousClock.now
                    var outcome = Outcome(started: started, ended: started)
                    do {
                        let reply = try AdminHTTP.post(
                            "/rpc", body: request, headers: ["Authorization": "Bearer \(author.token)"], port: proxy.port)
                        let json = try? JSONDecoder().decode(JSONValue.self, from: Data(reply.body.utf8))
                        outcome.tweetID = json?["result"]?["id"]?.stringValue
                        if outcome.tweetID == nil { outcome.failure = "HTTP \(reply.status): \(reply.body.prefix(200))" }
                    } catch {
                        outcome.failure = "\(error)"
                    }
                    outcome.ended = .now
                    run.outcomes.withLock { $0.append(outcome) }
                }
            }
        }
        _ = await eventually(timeout: .seconds(30), interval: .milliseconds(1)) { run.outcomes.withLock { $0.count } >= 100 }
        run.killedAt.withLock { $0 = .now }
        a.process.kill()
        // A call may still reach the instance between the signal and its death.
        _ = await a.process.waitForExit(timeout: .seconds(10))
        let died = ContinuousClock.now
        await withCheckedContinuation { done in finished.notify(queue: .global()) { done.resume() } }

        let kill = try #require(run.killedAt.withLock { $0 })
        let all = run.outcomes.withLock { $0 }
        let failed = all.filter { $0.tweetID == nil }
        #expect(all.count == calls)
        // Only calls under way when the instance died may fail. Of those begun before the signal, at
        // most one per client; a call begun between the signal and the death may also reach the
        // dying instance, whose socket still accepts until it is gone.
        #expect(failed.filter { $0.started < kill }.count <= 8, "\(failed.count) calls failed")
        #expect(
            failed.allSatisfy { $0.started < died && $0.ended >= kill },
            "\(failed.map { "\($0.started - kill)…\($0.ended - kill) (died at \(died - kill)): \($0.failure ?? "")" })")
        #expect(all.contains { $0.started > died && $0.tweetID != nil }, "no call succeeded after the instance died")
        // Every acknowledged post is there.
        for id in all.compactMap(\.tweetID) {
            let got = try await EdgeHTTP.rpc(edge.url, "tweets.get", ["tweetId": .string(id)])
            #expect(got["result"]?["id"]?.stringValue == id, "\(got)")
        }
    }
}
