import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import NIOCore
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
        router.ws(
            "rpc",
            shouldUpgrade: { request, context in
                let caller = self.caller(of: request, peer: context.peer)
                if let address = caller.address, self.socketsPerAddress.isFull(address) {
                    throw HTTPError(.tooManyRequests, message: Self.tooManySockets(fromAddress: self.socketsPerAddress.limit))
                }
                if let token = caller.token {
                    // In a task of its own: a task keeps the memory of its deepest call while it
                    // lives, and this one lives as long as the socket.
                    guard let user = await Task(operation: { await self.user(of: token) }).value else {
                        throw HTTPError(.unauthorized, message: "the access token in Authorization is not valid")
                    }
                    if self.socketsPerUser.isFull(user) {
                        throw HTTPError(.tooManyRequests, message: Self.tooManySockets(ofUser: self.socketsPerUser.limit))
                    }
                }
                return .upgrade([:])
            },
            onUpgrade: { inbound, outbound, context in
                let caller = self.caller(of: context.request, peer: context.requestContext.peer)
                let address = caller.address ?? ""
                // Counted here as well: sockets opened at once may all have passed the check above.
                guard self.socketsPerAddress.claim(address) else {
                    try await outbound.close(.policyViolation, reason: Self.tooManySockets(fromAddress: self.socketsPerAddress.limit))
                    return
                }
                defer { self.socketsPerAddress.release(address) }
                let session = SocketSession(
                    gateway: self, caller: caller, outbound: outbound, channel: context.requestContext.channel)
                try await session.run(inbound)
            })
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
