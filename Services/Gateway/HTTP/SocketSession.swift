import AuthTokens
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

    private let gateway: Gateway
    private let address: String?
    private let outbound: WebSocketOutboundWriter
    private let outbox = SocketOutbox()
    private let identity: Mutex<Identity>
    private let live: LiveLinks
    /// The token of the upgrade request's `Authorization`, taken when the session starts.
    private let upgradeToken: String?

    init(gateway: Gateway, caller: EdgeCaller, outbound: WebSocketOutboundWriter) {
        self.gateway = gateway
        self.address = caller.address
        self.outbound = outbound
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
        let writer = Task { [outbox, outbound] in await outbox.drain(into: outbound) }
        var failure: (any Error)?
        do {
            try await serve(inbound)
        } catch {
            failure = error
        }
        // The subscriptions end with the socket, whatever ended it.
        let (token, credential, address) = (identity.withLock { $0.token }, gateway.resources.serviceCredential, address)
        await live.close(meta: RequestMeta(token: token, service: credential, clientAddress: address))
        outbox.finish()
        await writer.value
        if let user = identity.withLock({ $0.user }) { gateway.socketsPerUser.release(user) }
        if let failure { throw failure }
    }

    private func serve(_ inbound: WebSocketInboundStream) async throws {
        if let token = upgradeToken, case .failure(let error) = await authenticate(token) {
            try await outbound.close(.policyViolation, reason: String(error.message.prefix(120)))
            return
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var inFlight = 0
            for try await message in inbound.messages(maxSize: gateway.settings.maxMessageBytes) {
                if inFlight >= GatewaySettings.callsInFlightPerSocket {
                    try await group.next()
                    inFlight -= 1
                }
                inFlight += 1
                group.addTask { await self.answer(message) }
            }
            try await group.waitForAll()
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
                    return .rateLimited(retryAfterMs: 1000, Gateway.tooManySockets(ofUser: gateway.socketsPerUser.limit))
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

/// What a socket sends, in order, written by one task: answers and pushed events. A socket whose
/// client does not read what is queued for it (more than ``maxQueuedBytes``) is closed, so that a
/// stalled client holds at most that much of the gateway's memory.
final class SocketOutbox: Sendable {
    static let maxQueuedBytes = 8 << 20

    private let stream: AsyncStream<Data>
    private let continuation: AsyncStream<Data>.Continuation
    private let queued = Atomic<Int>(0)
    private let overflowed = Atomic<Bool>(false)

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Data.self)
    }

    func send(_ frame: Data) {
        if queued.add(frame.count, ordering: .relaxed).newValue > Self.maxQueuedBytes {
            overflowed.store(true, ordering: .relaxed)
            continuation.finish()
            return
        }
        continuation.yield(frame)
    }

    /// No more frames: the writer ends once it wrote what is queued.
    func finish() {
        continuation.finish()
    }

    func drain(into outbound: WebSocketOutboundWriter) async {
        for await frame in stream {
            queued.subtract(frame.count, ordering: .relaxed)
            do {
                try await outbound.write(.text(String(decoding: frame, as: UTF8.self)))
            } catch {
                return
            }
        }
        if overflowed.load(ordering: .relaxed) {
            try? await outbound.close(.policyViolation, reason: "the client did not read its messages")
        }
    }
}
