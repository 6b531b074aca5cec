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
    private let identity: Mutex<Identity>
    private let live: LiveLinks

    init(gateway: Gateway, caller: EdgeCaller, outbound: WebSocketOutboundWriter) {
        self.gateway = gateway
        self.address = caller.address
        self.outbound = outbound
        self.identity = Mutex(Identity(token: nil, user: nil))
        self.live = LiveLinks(
            resources: gateway.resources,
            deliver: { frame in try? await outbound.write(.text(String(decoding: frame, as: UTF8.self))) },
            lost: { service in
                // The service's instance went away, and the subscriptions with it: the app reconnects
                // and subscribes again (notifications with its lastId, so nothing is missed).
                try? await outbound.close(
                    .unknown(1012), reason: "the \(service) service restarted: reconnect and subscribe again")
            })
        self.upgradeToken = caller.token
    }

    /// The token of the upgrade request's `Authorization`, taken when the session starts.
    private let upgradeToken: String?

    func run(_ inbound: WebSocketInboundStream) async throws {
        defer { release() }
        if let token = upgradeToken {
            if case .failure(let error) = await authenticate(token) {
                try await outbound.close(.policyViolation, reason: String(error.message.prefix(120)))
                await live.close()
                return
            }
        }
        do {
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
        } catch {
            await live.close()
            throw error
        }
        await live.close()
    }

    private func answer(_ message: WebSocketMessage) async {
        guard case .text(let text) = message else {
            await send(RPCRelay.errorResponse(.invalidRequest("send JSON-RPC as text messages, not binary")))
            return
        }
        let frame = Data(text.utf8)
        let user = identity.withLock { $0.user }
        let outcome = await gateway.limits.take(address: address, user: user, cost: RPCRelay.requestCount(frame))
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
        if let answer { await send(answer) }
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
                guard gateway.sockets.claim(principal.userID) else {
                    return .rateLimited(
                        retryAfterMs: 1000,
                        "this user holds \(gateway.sockets.limitPerUser) WebSockets on this gateway (the limit): close one first")
                }
                identity.user = principal.userID
            }
            identity.token = token
            return nil
        }
        if let verdict { return .failure(verdict) }
        return Result { try RawJSON(encoding: ["userId": String(principal.userID)]) }.mapError { _ in .internalError() }
    }

    private func release() {
        if let user = identity.withLock({ $0.user }) { gateway.sockets.release(user) }
    }

    private func send(_ frame: Data) async {
        try? await outbound.write(.text(String(decoding: frame, as: UTF8.self)))
    }
}
