import AviaryJSON
import Logging
import RPC

extension ServiceResources {
    /// Calls `method` of the service its name belongs to, with the service credential (and the
    /// caller's trace and time budget), and decodes its result.
    ///
    /// The other service's `unavailable` and `timeout` (and the reasons in `passing`) reach the
    /// caller as they are. Anything else is that service misbehaving, for a reason that is not the
    /// caller's (a `forbidden` for a wrong service credential, a `validation` of params the caller
    /// never sent): it is logged here and answered `unavailable`, since the caller can only retry.
    public func call<Params, Result>(
        _ method: RPCMethod<Params, Result>, _ params: Params, context: RPCContext?, passing reasons: Set<String> = []
    ) async throws -> Result {
        try await ask(method, context: context, passing: reasons) { client, meta in
            try await client.call(method.name, params: params, meta: meta, idempotent: true, as: Result.self)
        }
    }

    /// ``call(_:_:context:passing:)`` with the result left encoded, for an answer passed on or
    /// spliced into another as it came.
    public func callEncoded<Params, Result>(
        _ method: RPCMethod<Params, Result>, _ params: Params, context: RPCContext?, passing reasons: Set<String> = []
    ) async throws -> RawJSON {
        try await callEncoded(method, encodedParams: RawJSON(encoding: params), context: context, passing: reasons)
    }

    /// ``callEncoded(_:_:context:passing:)`` with params written beforehand, in `Params`' shape:
    /// for a hot path whose params cost more to encode through `Encodable` than the call itself.
    public func callEncoded<Params, Result>(
        _ method: RPCMethod<Params, Result>, encodedParams params: RawJSON, context: RPCContext?,
        passing reasons: Set<String> = []
    ) async throws -> RawJSON {
        try await ask(method, context: context, passing: reasons) { client, meta in
            try await client.send(method.name, params: params, meta: meta, idempotent: true).result()
        }
    }

    private func ask<Params, Result, T>(
        _ method: RPCMethod<Params, Result>, context: RPCContext?, passing reasons: Set<String>,
        _ body: (RPCClient, RequestMeta) async throws -> T
    ) async throws -> T {
        let service = method.service
        do {
            return try await body(client(for: service), internalMeta(context))
        } catch let error as RPCError where error.reason == "unavailable" || error.reason == "timeout" {
            throw error
        } catch let error as RPCError where error.reason.map(reasons.contains) ?? false {
            throw error
        } catch {
            (context?.logger ?? logger).error("\(method.name) failed", metadata: ["error": "\(String(reflecting: error))"])
            throw RPCError.unavailable("the \(service.rawValue) service could not answer; retry shortly")
        }
    }
}

extension RPCMethod {
    /// The service that answers this method, by its name's prefix.
    public var service: ServiceName {
        guard let service = ServiceName(methodPrefix: prefix) else { preconditionFailure("\(name) names no service") }
        return service
    }
}
