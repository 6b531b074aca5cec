import AviaryJSON
import ChannelSupport
import Foundation
import Logging
import RPC
import ServiceKit

/// Who a call through the edge is made for.
struct EdgeCaller: Sendable {
    /// The token calls carry when their own `_meta.token` is absent (HTTP `Authorization`, or the
    /// WebSocket's `gateway.authenticate`).
    var token: String?
    /// The client's address (``TrustedProxies/clientAddress(peer:forwardedFor:forwarded:)``).
    var address: String?
}

/// Sends the calls of apps on to the services: routed by method prefix to a healthy instance
/// (``MethodDirectory``), carrying the gateway's service credential (so that the services believe
/// `_meta.clientAddress`) and never a credential of the client's.
struct Forwarder: Sendable {
    let directory: MethodDirectory
    let resources: ServiceResources

    /// The method that sets or refreshes a WebSocket's token.
    static let authenticateMethod = "gateway.authenticate"

    /// Whether `method` leaves state on its connection (a subscription and its end).
    static func isLive(_ method: String) -> Bool {
        method.hasSuffix(".subscribe") || method.hasSuffix(".unsubscribe")
    }

    /// Answers `call` for `caller`; `live`, on a WebSocket, holds the connections subscriptions run on.
    func forward(_ request: RPCRelay.Call, for caller: EdgeCaller, live: LiveLinks?) async -> Result<RawJSON, RPCError> {
        if request.method == "rpc.discover" {
            let document = await directory.mergedDocument()
            return Result { try RawJSON(encoding: document) }.mapError { _ in .internalError() }
        }
        let service: ServiceName
        do {
            service = try await directory.route(request.method)
        } catch {
            return .failure(error)
        }
        return await call(service, request.method, params: request.params, meta: request.meta, for: caller, live: live)
    }

    /// Calls `method` of `service` for `caller`, with what the client said in `meta` (its token,
    /// trace and budget) and the gateway's credential and the client's address added.
    func call(
        _ service: ServiceName, _ method: String, params: RawJSON, meta given: RequestMeta = RequestMeta(),
        for caller: EdgeCaller, live: LiveLinks? = nil
    ) async -> Result<RawJSON, RPCError> {
        let budget = GatewaySettings.callTimeout.milliseconds
        let meta = RequestMeta(
            token: given.token ?? caller.token, service: resources.serviceCredential,
            traceparent: given.traceparent, timeoutMs: min(given.timeoutMs ?? budget, budget),
            clientAddress: caller.address)
        if Self.isLive(method) {
            guard let live else {
                return .failure(.invalidRequest("\(method) pushes events: call it on the WebSocket at GET /rpc"))
            }
            return await live.call(service, method, params: params, meta: meta)
        }
        let client = resources.client(for: service)
        return await Self.answer(of: service) {
            try await client.send(method, params: params, meta: meta, timeout: GatewaySettings.callTimeout)
        }
    }

    /// Calls `method` for `caller` and decodes its result: the service's error is thrown as it is.
    func call<Params, Result>(_ method: RPCMethod<Params, Result>, _ params: Params, for caller: EdgeCaller) async throws -> Result {
        try await raw(method, params, for: caller).decode(Result.self)
    }

    /// Calls `method` for `caller` and returns its result as the service wrote it.
    func raw<Params, Result>(_ method: RPCMethod<Params, Result>, _ params: Params, for caller: EdgeCaller) async throws -> RawJSON {
        guard let service = MethodDirectory.service(of: method.name) else { throw RPCError.methodNotFound(method.name) }
        return try await call(service, method.name, params: try RawJSON(encoding: params), for: caller).get()
    }

    /// The result of a call to `service`, or its error: the service's own, or `unavailable` when the
    /// call did not get an answer.
    static func answer(of service: ServiceName, _ send: () async throws -> RPCResponse) async -> Result<RawJSON, RPCError> {
        do {
            return .success(try await send().result())
        } catch let error as RPCError {
            return .failure(error)
        } catch {
            return .failure(.unavailable("the \(service) service could not answer; retry shortly"))
        }
    }
}
