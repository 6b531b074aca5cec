import AuthTokens
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import NIOWebSocket
import NIOFoundationCompat
import RPC
import ServiceKit

extension GatewayService {
    /// `POST /rpc` (a request or a batch in the body), `GET /rpc` as a WebSocket, `GET /rpc/discover`.
    func addRPCRoutes(to router: Router<EdgeContext>) {
        router.post("rpc") { request, context in try await self.answerHTTP(request, context: context) }
        router.get("rpc/discover") { _, _ in EdgeResponses.json(await self.directory.mergedDocument()) }
        for method in [HTTPRequest.Method.put, .delete, .patch] {
            router.on("rpc", method: method) { _, _ in
                EdgeResponses.failure(
                    .methodNotAllowed, "/rpc takes POST (JSON-RPC in the body) or GET (a WebSocket upgrade)",
                    headers: [.allow: "GET, POST"])
            }
        }
        router.get("rpc") { request, _ in
            if let problem = request.headers[HTTPField.Name(UpgradeCheck.invalidHeader)!] {
                return EdgeResponses.failure(.badRequest, problem)
            }
            // An upgrade is taken only as a connection's first request (EdgeChannel).
            return EdgeResponses.failure(
                .upgradeRequired, "GET /rpc opens a WebSocket: send Upgrade: websocket as a new connection's first request",
                headers: [.upgrade: "websocket"])
        }
    }

    /// Whether a WebSocket upgrade may go ahead: the caller, with the user its token in
    /// `Authorization` verified as, or why not. The token must verify; the user's and the address's
    /// sockets must be under their limits (counted when the socket opens: sockets opened at once
    /// may all pass here). `GET /api/v1/streaming` is Mastodon's (``MastodonStream``).
    func admitSocket(head: HTTPRequestHead, caller: EdgeCaller) async -> Result<SocketAdmission, SocketRefusal> {
        let path = head.uri.split(separator: "?", maxSplits: 1).first
        guard path == "/rpc" || path == "/api/v1/streaming" else {
            return .failure(SocketRefusal(status: .notFound, message: "WebSockets open at /rpc (and /api/v1/streaming)"))
        }
        if let address = caller.address, socketsPerAddress.isFull(address) {
            return .failure(
                SocketRefusal(status: .tooManyRequests, message: Self.tooManySockets(fromAddress: socketsPerAddress.limit), retryAfterSeconds: 1))
        }
        if path == "/api/v1/streaming" {
            return await MastodonStream.admit(head, caller: caller, gateway: self)
        }
        guard let token = caller.token else { return .success(SocketAdmission(caller: caller, principal: nil)) }
        guard let principal = try? await resources.tokenVerifier.verify(token) else {
            return .failure(SocketRefusal(status: .unauthorized, message: "the access token in Authorization is not valid"))
        }
        if socketsPerUser.isFull(principal.userID) {
            return .failure(
                SocketRefusal(status: .tooManyRequests, message: Self.tooManySockets(ofUser: socketsPerUser.limit), retryAfterSeconds: 1))
        }
        return .success(SocketAdmission(caller: caller, principal: principal))
    }

    static func tooManySockets(ofUser limit: Int) -> String {
        "this user holds \(limit) WebSockets on this gateway (the limit): close one first"
    }

    static func tooManySockets(fromAddress limit: Int) -> String {
        "this address holds \(limit) WebSockets on this gateway (the limit): close one first"
    }

    private func answerHTTP(_ request: Request, context: EdgeContext) async throws -> Response {
        let caller = caller(of: request, peer: context.peer)
        // A body that has not arrived in time closes the connection (a scheduled close on the
        // connection's loop costs no task and no thread).
        let channel = context.channel
        let deadline = channel.eventLoop.scheduleTask(in: .seconds(Int64(settings.requestTimeout.components.seconds))) {
            channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: settings.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            return EdgeResponses.failure(.contentTooLarge, "a /rpc body is at most \(settings.maxBodyBytes) bytes")
        }
        let frame = Data(buffer: body)
        guard let requests = RPCRelay.requestCount(frame) else {
            return EdgeResponses.json(
                RPCRelay.errorResponse(.parseError("parse error: the body is not valid JSON")), status: .badRequest)
        }
        let outcome = await limits.take(address: caller.address, user: await user(of: caller.token), cost: requests)
        let headers = EdgeResponses.limitHeaders(outcome)
        if let outcome, !outcome.allowed {
            return EdgeResponses.json(
                RPCRelay.errorResponse(EdgeLimits.refusal(outcome)), status: .tooManyRequests, headers: headers)
        }
        let forwarder = forwarder
        let answer = await RPCRelay.respond(to: frame) { call in
            if call.method == Forwarder.authenticateMethod {
                return .failure(.methodNotFound("\(call.method) (it sets a WebSocket's token; over HTTP send Authorization)"))
            }
            return await forwarder.forward(call, for: caller, live: nil)
        }
        guard let answer else { return Response(status: .noContent, headers: headers) }
        return EdgeResponses.json(answer, headers: headers)
    }
}
