import AviaryJSON
import Foundation
import HTTPTypes
import Locking
import Logging
import NIOCore
import NIOSSL
import NIOWebSocket
import RPC
import Synchronization
import TestSupport
import WSClient

/// A WebSocket to the gateway through swift-websocket's client (not Aviary's code): what arrives is
/// kept in order; calls wait for the answer with their id, events are picked by method.
final class TestSocket: Sendable {
    private let inbox: Inbox
    private let writer: WebSocketOutboundWriter
    private let ended: Task<WebSocketCloseFrame?, any Error>
    private let nextID = Atomic<Int>(1)

    private init(inbox: Inbox, writer: WebSocketOutboundWriter, ended: Task<WebSocketCloseFrame?, any Error>) {
        self.inbox = inbox
        self.writer = writer
        self.ended = ended
    }

    /// Opens `GET /rpc` (or `path`) on `base` (http://…), with `Authorization: Bearer <token>` when
    /// given; over TLS (`wss:`, any certificate accepted) with `tls`.
    static func open(_ base: String, token: String? = nil, tls: Bool = false, path: String = "/rpc") async throws -> TestSocket {
        let box = Inbox()
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        let url = base.replacingOccurrences(of: "http://", with: tls ? "wss://" : "ws://") + path
        var tlsConfiguration: TLSConfiguration?
        if tls {
            tlsConfiguration = .makeClientConfiguration()
            tlsConfiguration?.certificateVerification = .none
        }
        let (writers, writerSink) = AsyncStream.makeStream(of: WebSocketOutboundWriter.self)
        let ended = Task {
            // A refused upgrade never reaches the handler: the wait for the writer ends here.
            defer {
                writerSink.finish()
                box.end()
            }
            return try await WebSocketClient.connect(
                url: url,
                configuration: .init(maxFrameSize: 8 << 20, additionalHeaders: headers, sniHostname: tls ? "localhost" : nil),
                tlsConfiguration: tlsConfiguration, logger: Logger(label: "test-socket")
            ) { inbound, outbound, _ in
                writerSink.yield(outbound)
                writerSink.finish()
                for try await message in inbound.messages(maxSize: 8 << 20) {
                    guard case .text(let text) = message,
                        let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
                    else { continue }
                    box.append(value)
                }
            }
        }
        var iterator = writers.makeAsyncIterator()
        guard let writer = await iterator.next() else {
            // The upgrade was refused: the connect task says why.
            _ = try await ended.value
            throw EdgeTestError("the WebSocket closed before it opened")
        }
        return TestSocket(inbox: box, writer: writer, ended: ended)
    }

    /// Opens `count` sockets at once under a limit of the gateway's. Several may pass the
    /// upgrade's check before any is counted; those counted past the limit are closed as soon as
    /// they open. Says which stayed open (each answered a call), the close codes of those closed,
    /// and how many were refused at the upgrade.
    static func openAtOnce(_ count: Int, _ base: String, token: String? = nil) async
        -> (open: [TestSocket], closed: [WebSocketErrorCode?], refused: Int)
    {
        let opened = await withTaskGroup(of: TestSocket?.self) { group in
            for _ in 0..<count { group.addTask { try? await open(base, token: token) } }
            return await group.reduce(into: [TestSocket]()) { sockets, socket in socket.map { sockets.append($0) } }
        }
        var kept: [TestSocket] = []
        var closed: [WebSocketErrorCode?] = []
        for socket in opened {
            if (try? await socket.call("auth.me")) != nil {
                kept.append(socket)
            } else {
                closed.append(await socket.closing()??.closeCode)
            }
        }
        return (kept, closed, count - opened.count)
    }

    /// Sends `text` as one text message.
    func send(_ text: String) async throws {
        try await writer.write(.text(text))
    }

    /// Calls `method` and waits for its answer (the whole response object); fails at once if the
    /// socket ends first.
    func call(_ method: String, _ params: [String: JSONValue] = [:], timeout: Duration = .seconds(10)) async throws -> JSONValue {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let request: JSONValue = ["jsonrpc": "2.0", "id": .int(Int64(id)), "method": .string(method), "params": .object(params)]
        try await send(String(decoding: try JSONEncoder().encode(request), as: UTF8.self))
        var answer: JSONValue?
        var ended = false
        _ = await eventually(timeout: timeout) {
            ended = inbox.hasEnded
            answer = inbox.first { $0["id"]?.intValue == Int64(id) }
            return answer != nil || ended
        }
        guard let answer else {
            throw EdgeTestError(ended ? "the socket ended before \(method) was answered" : "no answer to \(method) within \(timeout)")
        }
        return answer
    }

    /// The first event pushed with `method` whose params satisfy `matching`, waiting up to `timeout`.
    func event(_ method: String, timeout: Duration = .seconds(10), matching: @escaping @Sendable (JSONValue) -> Bool = { _ in true })
        async -> JSONValue?
    {
        var found: JSONValue?
        _ = await eventually(timeout: timeout) {
            found = inbox.first { $0["method"]?.stringValue == method && $0["id"] == nil && matching($0["params"] ?? .null) }
            return found != nil
        }
        return found
    }

    /// Everything received so far.
    var messages: [JSONValue] { inbox.all }

    func close() async {
        try? await writer.close(.normalClosure, reason: nil)
        _ = try? await ended.value
    }

    /// The close frame the gateway sent (waits for the socket to end); nil when it did not end
    /// within `timeout`, and then this side ends it: a group waits for all its tasks, and awaiting
    /// `ended` does not stop at cancellation, so without that a socket left open hung the test.
    func closing(timeout: Duration = .seconds(10)) async -> WebSocketCloseFrame?? {
        await withTaskGroup(of: WebSocketCloseFrame??.self) { group in
            group.addTask { try? await self.ended.value }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            defer {
                group.cancelAll()
                ended.cancel()
            }
            return await group.next()!
        }
    }
}

/// What a socket received, shared between its reader and the test, and whether it has ended.
final class Inbox: Sendable {
    private let values = Locked<[JSONValue]>([])
    private let ended = Atomic<Bool>(false)

    func append(_ value: JSONValue) { values.withLock { $0.append(value) } }
    func first(where predicate: (JSONValue) -> Bool) -> JSONValue? { values.withLock { $0.first(where: predicate) } }
    var all: [JSONValue] { values.withLock { $0 } }
    func end() { ended.store(true, ordering: .releasing) }
    var hasEnded: Bool { ended.load(ordering: .acquiring) }
}
