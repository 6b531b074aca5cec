import Logging
import RPC

extension ServiceResources {
    /// Calls internal method `method` of `service` with the service credential (and the caller's
    /// trace and time budget) and decodes its result.
    ///
    /// The other service's `unavailable` and `timeout` (and the reasons in `passing`) reach the
    /// caller as they are. Anything else is that service misbehaving, for a reason that is not the
    /// caller's (a `forbidden` for a wrong service credential, a `validation` of params the caller
    /// never sent): it is logged here and answered `unavailable`, since the caller can only retry.
    public func callPeer<Result: Decodable>(
        _ service: ServiceName, _ method: String, params: some Encodable & Sendable, context: RPCContext?,
        passing reasons: Set<String> = [], as type: Result.Type = Result.self
    ) async throws -> Result {
        try await askPeer(service, method, context: context, passing: reasons) { client, meta in
            try await client.call(method, params: params, meta: meta, idempotent: true, as: type)
        }
    }

    /// ``callPeer(_:_:params:context:passing:as:)`` for a call made by `body` (given the client and
    /// the `_meta` to send), such as one that keeps the answer encoded.
    public func askPeer<T>(
        _ service: ServiceName, _ method: String, context: RPCContext?, passing reasons: Set<String> = [],
        _ body: (RPCClient, RequestMeta) async throws -> T
    ) async throws -> T {
        do {
            return try await body(client(for: service), internalMeta(context))
        } catch let error as RPCError where error.reason == "unavailable" || error.reason == "timeout" {
            throw error
        } catch let error as RPCError where error.reason.map(reasons.contains) ?? false {
            throw error
        } catch {
            (context?.logger ?? logger).error("\(method) failed", metadata: ["error": "\(String(reflecting: error))"])
            throw RPCError.unavailable("the \(service.rawValue) service could not answer; retry shortly")
        }
    }
}
