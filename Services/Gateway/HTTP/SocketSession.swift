import AuthTokens
import AviaryJSON
import Foundation
import Locking
import NIOWebSocket
import RPC
import ServiceKit

/// What the messages of one app's WebSocket at `GET /rpc` mean: each text message a JSON-RPC
/// message, answered; the events of its subscriptions pushed on it; a token given once (the
/// upgrade's `Authorization`, or `gateway.authenticate`) and refreshed without reconnecting. The
/// frames are ``SocketHandler``'s.
final class SocketSession: SocketMessages {
    private struct Identity {
        var token: String?
        /// The user the socket is counted for (``SocketRegistry``), once a token was accepted.
        var user: Int64?
    }

    let link: SocketLink
    private let gateway: GatewayService
    private let address: String?
    private let identity: Locked<Identity>
    private let live: LiveLinks
    /// The upgrade's caller and the user its token verified as, taken by ``open()``.
    private let admission: SocketAdmission

    let binaryRefusal = SocketSession.binaryAnswer
    private static let binaryAnswer = RPCRelay.errorResponse(.invalidRequest("send JSON-RPC as text messages, not binary"))

    init(gateway: GatewayService, admission: SocketAdmission, link: SocketLink) {
        self.gateway = gateway
        self.link = link
        self.address = admission.caller.address
        self.identity = Locked(Identity(token: nil, user: nil))
        self.admission = admission
        self.live = LiveLinks(
            channels: gateway.liveChannels, deliver: { link.send($0) },
            lost: { service in
                // The service's instance went away, and the subscriptions with it: the app reconnects
                // and subscribes again (notifications with its lastId, so nothing is missed).
                link.close(.unknown(1012), reason: "the \(service) service restarted: reconnect and subscribe again")
            })
    }

    /// Takes the upgrade's token, verified at the upgrade, if it carried one; the reason to close
    /// the socket when its user holds as many sockets as they may.
    func open() -> String? {
        guard let token = admission.caller.token, let principal = admission.principal else { return nil }
        return adopt(token, of: principal)?.message
    }

    /// Ends the socket's subscriptions and gives back its place among its user's sockets.
    func end() async {
        let (token, credential, address) = (identity.withLock { $0.token }, gateway.resources.serviceCredential, address)
        await live.close(meta: RequestMeta(token: token, service: credential, clientAddress: address))
        if let user = identity.withLock({ $0.user }) { gateway.socketsPerUser.release(user) }
    }

    /// The answer to one text message; nil for notifications only, or when it was queued here
    /// ahead of the events of the subscriptions the message opened (``LiveLinks/answer(_:)``).
    func answer(_ frame: Data) async -> Data? {
        let user = identity.withLock { $0.user }
        let outcome = await gateway.limits.take(address: address, user: user, cost: RPCRelay.requestCount(frame) ?? 1)
        let refusal = outcome.flatMap { $0.allowed ? nil : EdgeLimits.refusal($0) }
        return await live.answer {
            await RPCRelay.respond(to: frame) { call in
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
        }
    }

    /// Sets or refreshes the socket's token: it must verify, and a socket stays its first user's.
    private func authenticate(_ token: String) async -> Result<RawJSON, RPCError> {
        let principal: RPCPrincipal
        do {
            principal = try await gateway.resources.tokenVerifier.verify(token)
        } catch {
            return .failure(error)
        }
        if let refusal = adopt(token, of: principal) { return .failure(refusal) }
        return Result { try RawJSON(encoding: ["userId": String(principal.userID)]) }.mapError { _ in .internalError() }
    }

    /// Takes `token`, verified as `principal`'s, as the socket's; the refusal when the socket is
    /// another user's, or when this one holds as many sockets as they may.
    private func adopt(_ token: String, of principal: RPCPrincipal) -> RPCError? {
        identity.withLock { identity -> RPCError? in
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
    }
}
