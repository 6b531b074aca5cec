import AviaryJSON
import Foundation
import Locking
import Logging
import RPC
import Synchronization
import TestSupport
import Testing

/// The wire protocol over real TCP connections.
@Suite struct SocketTests {
    @Test func framesSplitAcrossPacketsAndManyInOnePacket() async throws {
        try await withRPCServer(makeTestRouter()) { port, _ in
            let client = try RPCLineClient(port: port)
            try client.send(#"{"jsonrpc":"2.0","id":1,"me"#)
            try await Task.sleep(for: .milliseconds(50))
            try client.send(#"thod":"subtract","params":{"minuend":5,"subtrahend":3}}"# + "\n")
            #expect(json(await client.readFrame())?["result"] == 2)
            try client.send(
                #"{"jsonrpc":"2.0","id":2,"method":"get_data"}"# + "\n" + #"{"jsonrpc":"2.0","id":3,"method":"get_data"}"# + "\r\n")
            let ids = Set([json(await client.readFrame())?["id"], json(await client.readFrame())?["id"]])
            #expect(ids == [2, 3])
        }
    }

    @Test func oversizeFrameGetsAnErrorThenTheConnectionCloses() async throws {
        try await withRPCServer(makeTestRouter(), maxFrameBytes: 1024) { port, _ in
            let client = try RPCLineClient(port: port)
            try client.send(#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"value":""# + String(repeating: "x", count: 4096))
            let response = json(await client.readFrame())
            #expect(response?["error"]?["code"] == -32600)
            #expect(response?["error"]?["message"]?.stringValue?.contains("1024") == true)
            #expect(await client.isClosedByPeer())
        }
    }

    /// A frame of exactly the limit is accepted with `\r\n` too, however the two end bytes arrive.
    @Test func aFrameOfExactlyTheLimitEndingInCRLFSplitBeforeTheLFIsAccepted() async throws {
        try await withRPCServer(makeTestRouter(), maxFrameBytes: 1024) { port, _ in
            let head = #"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"value":""#
            let frame = head + String(repeating: "x", count: 1024 - head.utf8.count - 3) + #""}}"#
            #expect(frame.utf8.count == 1024)
            let client = try RPCLineClient(port: port)
            try client.send(frame + "\r")
            try await Task.sleep(for: .milliseconds(100))
            try client.send("\n")
            #expect(json(await client.readFrame())?["id"] == 1)
        }
    }

    /// A frame must end within the frame timeout of its first byte, or its connection closes (a
    /// peer cannot hold a partial frame's buffer for ever); between frames a connection may idle.
    @Test func aFrameThatDoesNotEndInTimeClosesTheConnectionButIdlingBetweenFramesDoesNot() async throws {
        try await withRPCServer(makeTestRouter(), frameTimeout: .milliseconds(400)) { port, _ in
            let call = #"{"jsonrpc":"2.0","id":1,"method":"subtract","params":{"minuend":5,"subtrahend":3}}"#
            let idle = try RPCLineClient(port: port)
            let stalled = try RPCLineClient(port: port)
            for _ in 0..<3 {
                try idle.send(call + "\n")
                #expect(json(await idle.readFrame())?["result"] == 2)
                try await Task.sleep(for: .milliseconds(500))
            }
            // Half a frame, then a byte every 100 ms: still past the deadline.
            try stalled.send(String(call.prefix(20)))
            for character in call.dropFirst(20).prefix(6) {
                try await Task.sleep(for: .milliseconds(100))
                try? stalled.send(String(character))
            }
            let refusal = json(await stalled.readFrame())
            #expect(refusal?["error"]?["code"] == -32600 && refusal?["id"] == .null)
            #expect(refusal?["error"]?["message"]?.stringValue?.contains("frame too slow") == true)
            #expect(await stalled.isClosedByPeer())
            // A frame split over two sends within the deadline is fine, and so is the idle one.
            try idle.send(String(call.prefix(20)))
            try await Task.sleep(for: .milliseconds(100))
            try idle.send(String(call.dropFirst(20)) + "\n")
            #expect(json(await idle.readFrame())?["result"] == 2)
        }
    }

    @Test func aConnectionOverTheLimitIsToldWhyAndClosedAndOneClosingMakesRoom() async throws {
        try await withRPCServer(makeTestRouter(), maxConnections: 2) { port, _ in
            let call = #"{"jsonrpc":"2.0","id":1,"method":"subtract","params":{"minuend":5,"subtrahend":3}}"# + "\n"
            var held = [try RPCLineClient(port: port), try RPCLineClient(port: port)]
            for client in held {
                try client.send(call)
                #expect(json(await client.readFrame())?["result"] == 2)
            }
            let over = try RPCLineClient(port: port)
            let refusal = json(await over.readFrame())
            #expect(refusal?["id"] == .null)
            #expect(refusal?["error"]?["code"] == -32050)
            #expect(refusal?["error"]?["message"]?.stringValue?.contains("(2)") == true)
            #expect(await over.isClosedByPeer())
            // The two admitted ones still work; once one closes, a new connection is admitted.
            try held[1].send(call)
            #expect(json(await held[1].readFrame())?["result"] == 2)
            held.removeFirst()
            let admitted = try await eventually(timeout: .seconds(5)) {
                let client = try RPCLineClient(port: port)
                try client.send(call)
                return json(await client.readFrame())?["result"] == 2
            }
            #expect(admitted)
        }
    }

    /// A peer that sends calls and reads no answers: once the socket's buffers are full the server
    /// starts no more calls (it would hold every answer in memory), and when the peer reads again
    /// every call is answered.
    @Test func aPeerThatDoesNotReadItsAnswersStopsTheServerStartingCalls() async throws {
        let started = Locked(0)
        var router = makeTestRouter()
        let answer = String(repeating: "x", count: 64 * 1024)
        router.register("large", summary: "64 KiB of x", access: .anonymous) { (_: [String: Int], _) in
            started.withLock { $0 += 1 }
            return answer
        }
        try await withRPCServer(router, maxInFlightPerConnection: 8) { port, _ in
            let client = try RPCLineClient(port: port)
            let calls = 1000
            try client.send(String(repeating: #"{"jsonrpc":"2.0","id":1,"method":"large"}"# + "\n", count: calls))
            // Settled: nothing more starts for a while.
            var last = -1
            while started.withLock({ $0 }) != last {
                last = started.withLock { $0 }
                try await Task.sleep(for: .milliseconds(300))
            }
            // The kernel's socket buffers (a few MiB on loopback) take some answers; the rest wait.
            #expect(last < calls / 4, "\(last) of \(calls) calls started while no answer was read")
            var answered = 0
            while await client.readFrame()?.contains(answer) == true {
                answered += 1
                if answered == calls { break }
            }
            #expect(answered == calls)
        }
    }

    /// A batch counts as the most requests a batch may hold against the calls a connection may
    /// have in flight, so pipelined batches cannot run a hundred times that many calls at once.
    @Test func pipelinedBatchesRunNoMoreCallsAtOnceThanTheLimit() async throws {
        let running = Locked((now: 0, most: 0))
        var router = makeTestRouter()
        router.register("hold", summary: "runs for 50 ms", access: .anonymous) { (_: [String: Int], _) in
            running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            try await Task.sleep(for: .milliseconds(50))
            running.withLock { $0.now -= 1 }
            return true
        }
        let limit = RPCRouter.maxBatchLength
        try await withRPCServer(router, maxInFlightPerConnection: 2 * limit + limit / 2) { port, _ in
            let client = try RPCLineClient(port: port)
            let batch = "[" + (0..<limit).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"hold"}"# }.joined(separator: ",") + "]\n"
            try client.send(String(repeating: batch, count: 10))
            for _ in 0..<10 {
                #expect(json(await client.readFrame())?.arrayValue?.count == limit)
            }
            #expect(running.withLock { $0.most } == 2 * limit)
        }
    }

    @Test func pipelinedCallsAreAnsweredOutOfOrder() async throws {
        try await withRPCServer(makeTestRouter()) { port, _ in
            let client = try RPCLineClient(port: port)
            try client.send(
                #"{"jsonrpc":"2.0","id":"slow","method":"sleep","params":{"milliseconds":300}}"# + "\n"
                    + #"{"jsonrpc":"2.0","id":"fast","method":"sleep","params":{"milliseconds":1}}"# + "\n")
            #expect(json(await client.readFrame())?["id"] == "fast")
            #expect(json(await client.readFrame())?["id"] == "slow")
        }
    }

    @Test func thousandPipelinedCallsOnOneConnection() async throws {
        try await withRPCServer(makeTestRouter()) { port, _ in
            let client = try RPCLineClient(port: port)
            var frames = ""
            for id in 0..<1000 {
                frames += #"{"jsonrpc":"2.0","id":\#(id),"method":"subtract","params":{"minuend":\#(id),"subtrahend":1}}"# + "\n"
            }
            try client.send(frames)
            var seen = Set<Int64>()
            for _ in 0..<1000 {
                let response = try #require(json(await client.readFrame()))
                let id = try #require(response["id"]?.intValue)
                #expect(response["result"]?.intValue == id - 1)
                seen.insert(id)
            }
            #expect(seen.count == 1000)
        }
    }

    @Test func clientThatDisconnectsMidCallLeavesTheServerHealthy() async throws {
        try await withRPCServer(makeTestRouter()) { port, _ in
            do {
                let leaving = try RPCLineClient(port: port)
                try leaving.send(#"{"jsonrpc":"2.0","id":1,"method":"sleep","params":{"milliseconds":200}}"# + "\n")
            }
            try await Task.sleep(for: .milliseconds(300))
            let client = try RPCLineClient(port: port)
            try client.send(#"{"jsonrpc":"2.0","id":2,"method":"get_data"}"# + "\n")
            #expect(json(await client.readFrame())?["result"] == ["hello", 5])
        }
    }

    @Test func garbageFramesDoNotCloseTheConnection() async throws {
        try await withRPCServer(makeTestRouter()) { port, _ in
            let client = try RPCLineClient(port: port)
            try client.send([0xFF, 0xFE, 0x00, 0x0A])
            #expect(json(await client.readFrame())?["error"]?["code"] == -32700)
            try client.send("\n\n   \n")
            try client.send(#"{"jsonrpc":"2.0","id":2,"method":"get_data"}"# + "\n")
            #expect(json(await client.readFrame())?["id"] == 2)
        }
    }

    @Test func subscriptionPushesNotifications() async throws {
        var router = makeTestRouter()
        router.register("ticks.subscribe", summary: "Pushes three ticks.", access: .anonymous) {
            (_: Empty, context) -> [String: String] in
            guard let connection = context.connection, let id = connection.addSubscription(cancel: {}) else {
                throw RPCError.internalError()
            }
            Task {
                for tick in 1...3 {
                    let event: JSONValue = ["subscription": .string(id), "event": ["tick": .int(Int64(tick))]]
                    connection.push(method: "ticks.event", params: try RawJSON(encoding: event))
                }
            }
            return ["subscription": id]
        }
        try await withRPCServer(router) { port, _ in
            let connection = try await RPCClientConnection.connect(host: "127.0.0.1", port: port)
            let answer = try await connection.call("ticks.subscribe", as: [String: String].self)
            let subscription = try #require(answer["subscription"])
            var ticks: [Int64] = []
            for await notification in connection.notifications {
                #expect(notification.method == "ticks.event")
                let params = try notification.params.decode(JSONValue.self)
                #expect(params["subscription"] == .string(subscription))
                ticks.append(params["event"]?["tick"]?.intValue ?? -1)
                if ticks.count == 3 { break }
            }
            #expect(ticks == [1, 2, 3])
            await connection.close()
        }
    }

    /// A peer that hangs up leaves no work behind: its calls in flight are cancelled and the calls
    /// it sent that had not started yet never start.
    @Test func aPeerThatHangsUpLeavesNoWorkBehind() async throws {
        final class Counts: Sendable {
            let started = Atomic(0)
            let cancelled = Atomic(0)
            let completed = Atomic(0)
        }
        let counts = Counts()
        var router = makeTestRouter()
        router.register("slow.work", summary: "Works for 5 s.", access: .anonymous) { (_: Empty, _) -> Bool in
            counts.started.add(1, ordering: .relaxed)
            do {
                try await Task.sleep(for: .seconds(5))
            } catch {
                counts.cancelled.add(1, ordering: .relaxed)
                throw error
            }
            counts.completed.add(1, ordering: .relaxed)
            return true
        }
        try await withRPCServer(router, maxInFlightPerConnection: 4) { port, _ in
            let client = try RPCLineClient(port: port)
            try client.send((1...20).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"slow.work"}"# + "\n" }.joined())
            #expect(await eventually { counts.started.load(ordering: .relaxed) == 4 })
            client.hangUp()
            #expect(await eventually(timeout: .seconds(3)) { counts.cancelled.load(ordering: .relaxed) == 4 })
            try await Task.sleep(for: .milliseconds(300))
            #expect(counts.started.load(ordering: .relaxed) == 4 && counts.completed.load(ordering: .relaxed) == 0)
        }
    }

    /// A peer that stops reading holds at most 8 MiB of the server's memory: pushes beyond that past
    /// the socket's high-water mark fail and the connection closes, ending its subscriptions.
    @Test func aPeerThatStopsReadingIsDisconnected() async throws {
        final class Moments: Sendable {
            let ended = Locked<ContinuousClock.Instant?>(nil)
            let refused = Locked<ContinuousClock.Instant?>(nil)
            let pushed = Atomic(0)
        }
        let moments = Moments()
        var router = makeTestRouter()
        router.register("flood.subscribe", summary: "Pushes 16 KiB every millisecond.", access: .anonymous) {
            (_: Empty, context) -> [String: String] in
            guard let connection = context.connection,
                let id = connection.addSubscription(cancel: { moments.ended.withLock { $0 = .now } })
            else { throw RPCError.internalError() }
            let event = try RawJSON(encoding: ["subscription": .string(id), "event": .string(String(repeating: "x", count: 16_384))] as JSONValue)
            Task {
                while connection.push(method: "flood.event", params: event) {
                    moments.pushed.add(1, ordering: .relaxed)
                    try await Task.sleep(for: .milliseconds(1))
                }
                moments.refused.withLock { $0 = .now }
            }
            return ["subscription": id]
        }
        try await withRPCServer(router) { port, _ in
            let client = try RPCLineClient(port: port)
            try client.send(#"{"jsonrpc":"2.0","id":1,"method":"flood.subscribe"}"# + "\n")
            #expect(await client.readFrame() != nil)
            // Not another byte read.
            #expect(await eventually(timeout: .seconds(30)) { moments.ended.withLock { $0 } != nil && moments.refused.withLock { $0 } != nil })
            // What the kernel's buffers took, then 8 MiB: far fewer than 30 s of pushes.
            #expect(moments.pushed.load(ordering: .relaxed) < 5_000)
        }
    }

    /// Notifications pass through the client without being parsed when laid out as Aviary servers
    /// write them; a method that needs escapes takes the full parse. Either way method and params
    /// arrive intact, whatever the params' strings hold.
    @Test func pushedMethodsAndParamsArriveIntact() async throws {
        let methods = ["plain.event", #"quoted "method" \ with/slash"#, "ünïcode.event"]
        let params: JSONValue = [
            "text": #"","params":{"fake":1}} \" ]"#, "nested": ["list": [1, nil, true], "empty": [:]],
        ]
        var router = makeTestRouter()
        router.register("many.subscribe", summary: "Pushes one event per method.", access: .anonymous) {
            (_: Empty, context) -> Bool in
            guard let connection = context.connection else { throw RPCError.internalError() }
            Task {
                for method in methods { connection.push(method: method, params: try RawJSON(encoding: params)) }
            }
            return true
        }
        try await withRPCServer(router) { port, _ in
            let connection = try await RPCClientConnection.connect(host: "127.0.0.1", port: port)
            _ = try await connection.call("many.subscribe", as: Bool.self)
            var received: [(String, JSONValue)] = []
            for await notification in connection.notifications {
                received.append((notification.method, try notification.params.decode(JSONValue.self)))
                if received.count == methods.count { break }
            }
            #expect(received.map(\.0) == methods)
            #expect(received.allSatisfy { $0.1 == params })
            await connection.close()
        }
    }
}
