import AuthTokens
import AviaryJSON
import Foundation
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import RPC
import ServiceKit
import Synchronization

/// One app's WebSocket at `GET /rpc`: a JSON-RPC message per text message both ways, up to
/// ``GatewaySettings/callsInFlightPerSocket`` calls at once (the socket is not read meanwhile), the
/// events of its subscriptions pushed on it, and a token given once (the upgrade's
/// `Authorization`, or `gateway.authenticate`) and refreshed without reconnecting.
final class SocketSession: Sendable {
    private struct Identity {
        var token: String?
        /// The user the socket is counted for (``SocketRegistry``), once a token was accepted.
        var user: Int64?
    }

    private let gateway: GatewayService
    private let address: String?
    private let outbound: WebSocketOutboundWriter
    private let outbox: SocketOutbox
    private let identity: Mutex<Identity>
    private let live: LiveLinks
    /// The token of the upgrade request's `Authorization`, taken when the session starts.
    private let upgradeToken: String?

    /// - Parameter channel: the socket's connection, closed at once when its client stops reading.
    init(gateway: GatewayService, caller: EdgeCaller, outbound: WebSocketOutboundWriter, channel: any Channel) {
        self.gateway = gateway
        self.address = caller.address
        self.outbound = outbound
        self.outbox = SocketOutbox(outbound: outbound, hangUp: { channel.close(promise: nil) })
        self.identity = Mutex(Identity(token: nil, user: nil))
        self.upgradeToken = caller.token
        let outbox = self.outbox
        self.live = LiveLinks(
            channels: gateway.liveChannels, deliver: { outbox.send($0) },
            lost: { service in
                // The service's instance went away, and the subscriptions with it: the app reconnects
                // and subscribes again (notifications with its lastId, so nothing is missed).
                Task {
                    try? await outbound.close(
                        .unknown(1012), reason: "the \(service) service restarted: reconnect and subscribe again")
                }
            })
    }

    func run(_ inbound: WebSocketInboundStream) async throws {
        var failure: (any Error)?
        do {
            try await serve(inbound)
        } catch {
            failure = error
        }
        // The subscriptions end with the socket, whatever ended it.
        let (token, credential, address) = (identity.withLock { $0.token }, gateway.resources.serviceCredential, address)
        await live.close(meta: RequestMeta(token: token, service: credential, clientAddress: address))
        await outbox.finish()
        if let user = identity.withLock({ $0.user }) { gateway.socketsPerUser.release(user) }
        if let failure { throw failure }
    }

    private func serve(_ inbound: WebSocketInboundStream) async throws {
        if let token = upgradeToken, case .failure(let error) = await authenticate(token) {
            try await outbound.close(.policyViolation, reason: String(error.message.prefix(120)))
            return
        }
        // A discarding group: a finished call's task, and the memory it held, go at once.
        let calls = CallsInFlight(limit: GatewaySettings.callsInFlightPerSocket)
        try await withThrowingDiscardingTaskGroup { group in
            for try await message in inbound.messages(maxSize: gateway.settings.maxMessageBytes) {
                await calls.enter()
                group.addTask {
                    await self.answer(message)
                    calls.leave()
                }
            }
        }
    }

    private func answer(_ message: WebSocketMessage) async {
        guard case .text(let text) = message else {
            outbox.send(RPCRelay.errorResponse(.invalidRequest("send JSON-RPC as text messages, not binary")))
            return
        }
        let frame = Data(text.utf8)
        let user = identity.withLock { $0.user }
        let outcome = await gateway.limits.take(address: address, user: user, cost: RPCRelay.requestCount(frame) ?? 1)
        let refusal = outcome.flatMap { $0.allowed ? nil : EdgeLimits.refusal($0) }
        let answer = await RPCRelay.respond(to: frame) { call in
            if let refusal { return .failure(refusal) }
            if call.method == Forwarder.authenticateMethod {
                guard let token = call.params.strings(named: ["token"])?["token"] else {
                    return .failure(.invalidParams("missing parameter 'token'", field: "token"))
                }
                return await self.authenticate(token)
            }
            let caller = EdgeCaller(token: self.identity.withLock { $0.token }, address: self.address)
            return await self.gateway.forwarder.forward(call, for: caller, live: self.live)
        }
        if let answer { outbox.send(answer) }
    }

    /// Sets or refreshes the socket's token: it must verify, and a socket stays its first user's.
    private func authenticate(_ token: String) async -> Result<RawJSON, RPCError> {
        let principal: RPCPrincipal
        do {
            principal = try await gateway.resources.tokenVerifier.verify(token)
        } catch {
            return .failure(error)
        }
        let verdict = identity.withLock { identity -> RPCError? in
            if let user = identity.user {
                guard user == principal.userID else {
                    return .forbidden("this socket belongs to another user; open a socket of its own for this token")
                }
            } else {
                guard gateway.socketsPerUser.claim(principal.userID) else {
                    return .rateLimited(retryAfterMs: 1000, GatewayService.tooManySockets(ofUser: gateway.socketsPerUser.limit))
                }
                identity.user = principal.userID
            }
            identity.token = token
            return nil
        }
        if let verdict { return .failure(verdict) }
        return Result { try RawJSON(encoding: ["userId": String(principal.userID)]) }.mapError { _ in .internalError() }
    }
}

/// Holds a socket's reading while it has `limit` calls in flight, until one of them ends. One
/// reader waits at a time.
final class CallsInFlight: Sendable {
    private struct State {
        var count = 0
        var reader: CheckedContinuation<Void, Never>?
    }

    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes a place, waiting while all `limit` are taken.
    func enter() async {
        if takePlace(orWait: nil) { return }
        await withCheckedContinuation { continuation in
            if takePlace(orWait: continuation) { continuation.resume() }
        }
    }

    /// Takes a place if one is free; otherwise leaves `reader`, when given, to be resumed by
    /// ``leave()``.
    private func takePlace(orWait reader: CheckedContinuation<Void, Never>?) -> Bool {
        state.withLock { state in
            guard state.count < limit else {
                if let reader { state.reader = reader }
                return false
            }
            state.count += 1
            return true
        }
    }

    /// Gives a place back, to the waiting reader if there is one.
    func leave() {
        let reader = state.withLock { state in
            guard let reader = state.reader else {
                state.count -= 1
                return CheckedContinuation<Void, Never>?.none
            }
            state.reader = nil
            return reader
        }
        reader?.resume()
    }
}

/// What a socket sends, in order: answers and pushed events. A writer task runs only while
/// frames wait, one at a time, so an idle socket holds no task of its own for writing (a task keeps
/// the memory of its deepest call for as long as it lives). A socket whose client does not read
/// what is queued for it (more than ``maxQueuedBytes``) is hung up on, so that a stalled client
/// holds at most that much of the gateway's memory.
final class SocketOutbox: Sendable {
    static let maxQueuedBytes = 8 << 20

    private struct State {
        var frames: [Data] = []
        var queuedBytes = 0
        var writer: Task<Void, Never>?
        /// No more frames are taken: the session ended, the socket failed, or it was hung up on.
        var finished = false
    }

    private let outbound: WebSocketOutboundWriter
    private let hangUp: @Sendable () -> Void
    private let state = Mutex(State())

    /// - Parameter hangUp: closes the connection at once, whatever its writes wait for.
    init(outbound: WebSocketOutboundWriter, hangUp: @escaping @Sendable () -> Void) {
        self.outbound = outbound
        self.hangUp = hangUp
    }

    func send(_ frame: Data) {
        let overflowed = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.queuedBytes += frame.count
            guard state.queuedBytes <= Self.maxQueuedBytes else {
                state.finished = true
                state.frames = []
                return true
            }
            state.frames.append(frame)
            if state.writer == nil { state.writer = Task { await self.write() } }
            return false
        }
        // Its writes wait for a client that does not read: a close frame would wait behind them.
        if overflowed { hangUp() }
    }

    /// No more frames; returns once what is queued is written.
    func finish() async {
        let writer = state.withLock { state in
            state.finished = true
            return state.writer
        }
        await writer?.value
    }

    /// The frames waiting, taken for writing; empty, with the writer's place given up, when none wait.
    private func takeFrames() -> [Data] {
        state.withLock { state in
            let frames = state.frames
            if frames.isEmpty { state.writer = nil }
            state.frames = []
            state.queuedBytes = 0
            return frames
        }
    }

    private func write() async {
        while case let frames = takeFrames(), !frames.isEmpty {
            for frame in frames {
                do {
                    try await outbound.write(.text(String(decoding: frame, as: UTF8.self)))
                } catch {
                    // The socket is gone: nothing more is written.
                    state.withLock { state in
                        state.finished = true
                        state.frames = []
                    }
                    return
                }
            }
        }
    }
}
