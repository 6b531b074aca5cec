import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Logging
import RPC
import Synchronization
import WSClient

/// The socket under an ``AviaryClient``: connects on first use and again after every loss, matches
/// answers to calls by id, and hands pushed events to the live feed whose subscription they name.
final class ClientLink: Sendable {
    private struct State {
        var writer: WebSocketOutboundWriter?
        /// Calls waiting for a connection.
        var waiters: [Int64: CheckedContinuation<WebSocketOutboundWriter, any Error>] = [:]
        /// Calls waiting for their answer, by request id.
        var pending: [Int64: Pending] = [:]
        var nextID: Int64 = 1
        var feeds: [ObjectIdentifier: LiveFeed] = [:]
        var subscriptions: [String: LiveFeed] = [:]
        var runner: Task<Void, Never>?
        var closed = false
    }

    /// A call waiting for its answer, and what must happen as it comes, before the next message is
    /// read (a subscription's route, so that the events pushed right behind its answer find it).
    private struct Pending {
        var continuation: CheckedContinuation<RPCResponse, any Error>
        var onAnswer: (@Sendable (RPCResponse) -> Void)?
    }

    private let configuration: AviaryClient.Configuration
    private let logger: Logger
    private let url: String
    private let state = Locked(State())

    init(configuration: AviaryClient.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        var url = configuration.gateway
        for (from, to) in [("https://", "wss://"), ("http://", "ws://")] where url.hasPrefix(from) {
            url = to + url.dropFirst(from.count)
        }
        while url.hasSuffix("/") { url.removeLast() }
        self.url = url + "/rpc"
    }

    func close() async {
        let (runner, feeds) = state.withLock { state in
            state.closed = true
            return (state.runner, Array(state.feeds.values))
        }
        for feed in feeds { feed.end(throwing: nil) }
        runner?.cancel()
        await runner?.value
    }

    // MARK: Calls

    func call<Params, Result>(
        _ method: RPCMethod<Params, Result>, _ params: Params, token: String?,
        onAnswer: (@Sendable (RPCResponse) -> Void)? = nil
    ) async throws -> Result {
        try await send(method.name, params: RawJSON(encoding: params), token: token, onAnswer: onAnswer).decode(Result.self)
    }

    /// Sends a request and waits for its answer, within ``AviaryClient/Configuration/callTimeout``
    /// (the wait for a connection included). `onAnswer` runs on the reader as the answer comes,
    /// before the next message is read.
    func send(
        _ method: String, params: RawJSON, token: String?, onAnswer: (@Sendable (RPCResponse) -> Void)? = nil
    ) async throws -> RPCResponse {
        let deadline = ContinuousClock.now + configuration.callTimeout
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let timer = Task {
            try await Task.sleep(until: deadline, clock: .continuous)
            self.fail(id, with: RPCError.timeout("no answer from the gateway within \(self.configuration.callTimeout)"))
        }
        defer { timer.cancel() }
        let writer = try await connectedWriter(for: id)
        let frame = try RequestEncoding.request(id: id, method: method, params: params, meta: RequestMeta(token: token))
        let text = String(decoding: frame.dropLast(), as: UTF8.self)
        return try await withCheckedThrowingContinuation { continuation in
            let accepted = state.withLock { state -> Bool in
                guard !state.closed, state.writer != nil else { return false }
                state.pending[id] = Pending(continuation: continuation, onAnswer: onAnswer)
                return true
            }
            guard accepted else {
                continuation.resume(throwing: Self.lost)
                return
            }
            Task {
                do {
                    try await writer.write(.text(text))
                } catch {
                    self.fail(id, with: Self.lost)
                }
            }
        }
    }

    static let lost = RPCError.unavailable("the connection to the gateway was lost; retry")

    private func connectedWriter(for id: Int64) async throws -> WebSocketOutboundWriter {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<WebSocketOutboundWriter, RPCError>? in
                if state.closed { return .failure(RPCError.unavailable("the client was closed")) }
                if let writer = state.writer { return .success(writer) }
                state.waiters[id] = continuation
                if state.runner == nil { state.runner = Task { await self.run() } }
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    /// Ends the wait of call `id` (for a connection or for its answer) with `error`.
    private func fail(_ id: Int64, with error: RPCError) {
        let (waiter, pending) = state.withLock { state in
            (state.waiters.removeValue(forKey: id), state.pending.removeValue(forKey: id))
        }
        waiter?.resume(throwing: error)
        pending?.continuation.resume(throwing: error)
    }

    // MARK: The socket

    private func run() async {
        var delay = configuration.reconnectDelay
        while !Task.isCancelled, !state.withLock({ $0.closed }) {
            let opened = Atomic<Bool>(false)
            do {
                _ = try await WebSocketClient.connect(
                    url: url, configuration: .init(maxFrameSize: configuration.maxMessageBytes), logger: logger
                ) { inbound, outbound, _ in
                    opened.store(true, ordering: .relaxed)
                    self.connected(outbound)
                    for try await message in inbound.messages(maxSize: self.configuration.maxMessageBytes) {
                        if case .text(let text) = message { self.received(text) }
                    }
                }
            } catch {
                logger.debug("the gateway's socket failed", metadata: ["error": "\(error)"])
            }
            disconnected()
            if opened.load(ordering: .relaxed) { delay = configuration.reconnectDelay }
            do {
                try await Task.sleep(for: delay)
            } catch {
                break
            }
            delay = min(delay * 2, configuration.maxReconnectDelay)
        }
        disconnected()
    }

    private func connected(_ writer: WebSocketOutboundWriter) {
        let (waiters, feeds) = state.withLock { state in
            state.writer = writer
            defer { state.waiters = [:] }
            return (Array(state.waiters.values), Array(state.feeds.values))
        }
        for waiter in waiters { waiter.resume(returning: writer) }
        for feed in feeds { Task { await feed.subscribe(on: self) } }
    }

    private func disconnected() {
        let (pending, waiters) = state.withLock { state in
            state.writer = nil
            state.subscriptions = [:]
            defer { state.pending = [:] }
            let waiters = state.closed ? Array(state.waiters.values) : []
            if state.closed { state.waiters = [:] }
            return (Array(state.pending.values), waiters)
        }
        for call in pending { call.continuation.resume(throwing: Self.lost) }
        for waiter in waiters { waiter.resume(throwing: RPCError.unavailable("the client was closed")) }
    }

    /// What the gateway sends: an answer (`id`) or a pushed event (`method`, `params`).
    private struct Incoming: Decodable {
        var id: Int64?
        var params: Pushed?

        struct Pushed: Decodable {
            var subscription: String
            var event: JSONValue
        }
    }

    private func received(_ text: String) {
        let frame = Data(text.utf8)
        guard let incoming = try? JSONDecoder().decode(Incoming.self, from: frame) else {
            logger.debug("the gateway sent a message that is neither an answer nor an event")
            return
        }
        if let id = incoming.id {
            guard let call = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return }
            let response = RPCResponse(frame: frame)
            call.onAnswer?(response)
            call.continuation.resume(returning: response)
        } else if let pushed = incoming.params {
            state.withLock { $0.subscriptions[pushed.subscription] }?.deliver(pushed.event)
        }
    }

    // MARK: Live feeds

    func follow(_ kind: LiveFeed.Kind, lastId: String?, client: AviaryClient) -> AsyncThrowingStream<JSONValue, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: JSONValue.self)
        let feed = LiveFeed(kind: kind, lastId: lastId, continuation: continuation) { [weak client] in
            try await client?.token()
        }
        enum Start { case closed, now, onConnect }
        // One lock with `connected(_:)`'s: a feed added before the socket is up is subscribed by
        // it, one added after subscribes here; never both, which would deliver every event twice.
        let start = state.withLock { state -> Start in
            guard !state.closed else { return .closed }
            state.feeds[ObjectIdentifier(feed)] = feed
            if state.writer != nil { return .now }
            if state.runner == nil { state.runner = Task { await self.run() } }
            return .onConnect
        }
        switch start {
        case .closed:
            continuation.finish(throwing: RPCError.unavailable("the client was closed"))
            return stream
        case .now:
            Task { await feed.subscribe(on: self) }
        case .onConnect:
            break
        }
        continuation.onTermination = { [weak self] _ in self?.stopFollowing(feed) }
        return stream
    }

    /// Whether `feed` is still followed (its sequence not ended, the client not closed).
    func isFollowing(_ feed: LiveFeed) -> Bool {
        state.withLock { !$0.closed && $0.feeds[ObjectIdentifier(feed)] != nil }
    }

    func route(_ subscription: String, to feed: LiveFeed) {
        state.withLock { $0.subscriptions[subscription] = feed }
    }

    /// Forgets `feed` and ends its subscription on the gateway (best effort).
    func stopFollowing(_ feed: LiveFeed) {
        let subscription = state.withLock { state -> String? in
            state.feeds[ObjectIdentifier(feed)] = nil
            guard let entry = state.subscriptions.first(where: { $0.value === feed }) else { return nil }
            state.subscriptions[entry.key] = nil
            return entry.key
        }
        guard let subscription else { return }
        Task {
            let token = try? await feed.token()
            let params = UnsubscribeParams(subscription: subscription)
            switch feed.kind {
            case .notifications: _ = try? await self.call(NotificationsAPI.unsubscribe, params, token: token)
            case .messaging: _ = try? await self.call(MessagingAPI.unsubscribe, params, token: token)
            }
        }
    }
}

/// One live event sequence of a client: its subscription on the current socket, made again on the
/// next one.
final class LiveFeed: Sendable {
    enum Kind: Sendable {
        case notifications
        case messaging
    }

    let kind: Kind
    let token: @Sendable () async throws -> String?
    private let continuation: AsyncThrowingStream<JSONValue, any Error>.Continuation
    /// The last notification delivered, to go on from after a reconnect.
    private let lastId: Locked<String?>
    /// How many times it subscribed.
    private let subscriptions = Atomic<Int>(0)

    init(
        kind: Kind, lastId: String?, continuation: AsyncThrowingStream<JSONValue, any Error>.Continuation,
        token: @escaping @Sendable () async throws -> String?
    ) {
        self.kind = kind
        self.lastId = Locked(lastId)
        self.continuation = continuation
        self.token = token
    }

    /// Subscribes on the link's current socket, trying again while the gateway or the service
    /// cannot answer (a socket lost meanwhile is left to the next one, which subscribes anew); any
    /// other refusal (signed out, too many subscriptions) ends the sequence with it.
    func subscribe(on link: ClientLink) async {
        var delay = Duration.milliseconds(250)
        while link.isFollowing(self) {
            do {
                try await subscribeOnce(on: link)
                return
            } catch let error as RPCError where error == ClientLink.lost {
                return
            } catch let error as RPCError where error.reason == "unavailable" || error.reason == "timeout" {
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            } catch {
                // Ending the sequence stops following it (`onTermination`).
                end(throwing: error)
                return
            }
        }
    }

    private func subscribeOnce(on link: ClientLink) async throws {
        let token = try await token()
        // Routed as the answer is read: the gateway pushes the events a subscription starts with
        // (those missed since `lastId`) right behind it, before this task would run again.
        let route: @Sendable (RPCResponse) -> Void = { [weak link] response in
            if let answer = try? response.decode(SubscriptionResult.self) { link?.route(answer.subscription, to: self) }
        }
        switch kind {
        case .notifications:
            let after = lastId.withLock { $0 }.flatMap { EntityID($0) }
            _ = try await link.call(NotificationsAPI.subscribe, NotificationSubscribeParams(lastId: after), token: token, onAnswer: route)
        case .messaging:
            _ = try await link.call(MessagingAPI.subscribe, Empty(), token: token, onAnswer: route)
        }
        if subscriptions.add(1, ordering: .relaxed).newValue > 1, kind == .messaging {
            continuation.yield(["type": "resync"])
        }
    }

    func deliver(_ event: JSONValue) {
        if event["type"]?.stringValue == "notification", let id = event["notification"]?["id"]?.stringValue {
            lastId.withLock { $0 = id }
        }
        continuation.yield(event)
        if event["type"]?.stringValue == "unsubscribed" { end(throwing: nil) }
    }

    func end(throwing error: (any Error)?) {
        continuation.finish(throwing: error)
    }
}
