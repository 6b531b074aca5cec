import Foundation
import HTTPTypes
import Locking
import Logging
import NIOCore
import NIOWebSocket
import Synchronization
import WSClient

/// A WebSocket to the gateway for the benchmarks: calls matched to their answers by id, waits for
/// a pushed message that contains a given text. Answers are matched without decoding them, by the
/// layout the gateway writes (`{"jsonrpc":"2.0","id":<n>,…`).
final class BenchSocket: Sendable {
    /// How long a call waits for its answer before it fails.
    static let callTimeout = Duration.seconds(10)

    private let writer: WebSocketOutboundWriter
    private let shared: SharedState
    private let ids = Atomic<Int>(1)
    private let ended: Task<Void, Never>

    private init(writer: WebSocketOutboundWriter, shared: SharedState, ended: Task<Void, Never>) {
        self.writer = writer
        self.shared = shared
        self.ended = ended
    }

    /// Opens `ws://host:port/rpc`, with `Authorization: Bearer <token>` when given.
    static func open(host: String, port: Int, token: String? = nil) async throws -> BenchSocket {
        let shared = SharedState()
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        let (writers, sink) = AsyncStream.makeStream(of: WebSocketOutboundWriter.self)
        let outcome = Locked<(any Error)?>(nil)
        let ended = Task {
            defer { sink.finish() }
            do {
                try await WebSocketClient.connect(
                    url: "ws://\(host):\(port)/rpc", configuration: .init(maxFrameSize: 8 << 20, additionalHeaders: headers),
                    logger: Logger(label: "bench-socket")
                ) { inbound, outbound, _ in
                    sink.yield(outbound)
                    for try await message in inbound.messages(maxSize: 8 << 20) {
                        if case .text(let text) = message { shared.received(text) }
                    }
                }
            } catch {
                outcome.withLock { $0 = error }
            }
            shared.closed()
        }
        var iterator = writers.makeAsyncIterator()
        guard let writer = await iterator.next() else {
            throw outcome.withLock { $0 } ?? ChannelError.ioOnClosedChannel
        }
        let socket = BenchSocket(writer: writer, shared: shared, ended: ended)
        shared.startSweeping()
        return socket
    }

    /// Sends a request of `method` with `params` (a JSON object's text) and returns the answer's text.
    func call(_ method: String, params: String) async throws -> String {
        let id = ids.wrappingAdd(1, ordering: .relaxed).oldValue
        let text = #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"#
        return try await withCheckedThrowingContinuation { continuation in
            let open = shared.state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.pending[id] = BenchSocketState.Pending(continuation: continuation, started: .now)
                return true
            }
            guard open else {
                continuation.resume(throwing: ChannelError.ioOnClosedChannel)
                return
            }
            Task {
                do {
                    try await writer.write(.text(text))
                } catch {
                    shared.state.withLock { $0.pending.removeValue(forKey: id) }?.continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Waits until a message containing `text` arrives (true), or `timeout` passes (false). Call it
    /// before what makes the message be sent.
    func watch(for text: String) -> BenchWatch {
        BenchWatch(socket: self, text: text)
    }

    fileprivate func register(_ text: String, _ continuation: CheckedContinuation<Bool, Never>) {
        let closed = shared.state.withLock { state -> Bool in
            if !state.closed { state.watches.append((text, continuation)) }
            return state.closed
        }
        if closed { continuation.resume(returning: false) }
    }

    fileprivate func cancel(_ text: String) {
        let waiting = shared.state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            let matching = state.watches.filter { $0.text == text }.map(\.continuation)
            state.watches.removeAll { $0.text == text }
            return matching
        }
        for continuation in waiting { continuation.resume(returning: false) }
    }

    /// Whether the gateway still holds the socket open.
    var isOpen: Bool { !shared.state.withLock { $0.closed } }

    func close() async {
        try? await writer.close(.normalClosure, reason: nil)
        await ended.value
    }
}

/// A wait for one message, armed before what makes it come.
struct BenchWatch: Sendable {
    let socket: BenchSocket
    let text: String

    func wait(timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await withCheckedContinuation { socket.register(text, $0) } }
            group.addTask {
                try? await Task.sleep(for: timeout)
                socket.cancel(text)
                return false
            }
            let first = await group.next() ?? false
            socket.cancel(text)
            group.cancelAll()
            return first
        }
    }
}

/// The calls waiting for their answers and the waits for pushed messages of one socket.
struct BenchSocketState {
    struct Pending {
        var continuation: CheckedContinuation<String, any Error>
        var started: ContinuousClock.Instant
    }

    var pending: [Int: Pending] = [:]
    var watches: [(text: String, continuation: CheckedContinuation<Bool, Never>)] = []
    var closed = false
}

/// What a socket's reader and its calls share.
private final class SharedState: Sendable {
    let state = Locked(BenchSocketState())

    func received(_ text: String) {
        let prefix = #"{"jsonrpc":"2.0","id":"#
        if text.hasPrefix(prefix) {
            let digits = text.utf8.dropFirst(prefix.utf8.count).prefix { (48...57).contains($0) }
            if let id = Int(String(decoding: digits, as: UTF8.self)),
                let pending = state.withLock({ $0.pending.removeValue(forKey: id) })
            {
                pending.continuation.resume(returning: text)
            }
            return
        }
        let matched = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            let found = state.watches.filter { text.contains($0.text) }.map(\.continuation)
            if !found.isEmpty { state.watches.removeAll { text.contains($0.text) } }
            return found
        }
        for continuation in matched { continuation.resume(returning: true) }
    }

    func closed() {
        let (pending, watches) = state.withLock { state in
            state.closed = true
            defer { state.pending = [:]; state.watches = [] }
            return (Array(state.pending.values), state.watches.map(\.continuation))
        }
        for call in pending { call.continuation.resume(throwing: ChannelError.ioOnClosedChannel) }
        for watch in watches { watch.resume(returning: false) }
    }

    /// Fails the calls unanswered for ``BenchSocket/callTimeout``, every second, until the socket closes.
    func startSweeping() {
        Task { [weak self] in
            while let self, !self.state.withLock({ $0.closed }) {
                let now = ContinuousClock.now
                let late = self.state.withLock { state -> [CheckedContinuation<String, any Error>] in
                    let ids = state.pending.filter { now - $0.value.started > BenchSocket.callTimeout }.map(\.key)
                    return ids.compactMap { state.pending.removeValue(forKey: $0)?.continuation }
                }
                for continuation in late { continuation.resume(throwing: BenchTimeout()) }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}

struct BenchTimeout: Error {}
