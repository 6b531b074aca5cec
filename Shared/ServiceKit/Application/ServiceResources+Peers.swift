import AviaryAPI
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
    func call<Params, Result>(
        _ method: RPCMethod<Params, Result>, _ params: Params, context: RPCContext?, passing reasons: Set<String> = []
    ) async throws -> Result {
        try await ask(method, context: context, passing: reasons) { client, meta in
            try await client.call(method.name, params: params, meta: meta, idempotent: true, as: Result.self)
        }
    }

    /// ``call(_:_:context:passing:)`` with the result left encoded, for an answer passed on or
    /// spliced into another as it came.
    func callEncoded<Params, Result>(
        _ method: RPCMethod<Params, Result>, _ params: Params, context: RPCContext?, passing reasons: Set<String> = []
    ) async throws -> RawJSON {
        try await callEncoded(method, encodedParams: RawJSON(encoding: params), context: context, passing: reasons)
    }

    /// ``callEncoded(_:_:context:passing:)`` with params written beforehand, in `Params`' shape:
    /// for a hot path whose params cost more to encode through `Encodable` than the call itself.
    func callEncoded<Params, Result>(
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

extension ServiceResources {
    /// The other services, called by their methods' descriptors:
    /// `resources.peers.auth.getUsers(GetUsersParams(ids: ids), context: context)`. Nothing is
    /// written per method: a peer finds each method among its API's descriptors.
    public var peers: Peers { Peers(resources: self) }
}

/// A client of each service, named as the methods' prefixes name them.
public struct Peers: Sendable {
    let resources: ServiceResources

    public var auth: Peer<AuthAPI> { Peer(resources: resources) }
    /// auth's account methods, which share its `auth.` prefix.
    public var accounts: Peer<AccountAPI> { Peer(resources: resources) }
    public var graph: Peer<GraphAPI> { Peer(resources: resources) }
    public var tweets: Peer<TweetsAPI> { Peer(resources: resources) }
    public var timeline: Peer<TimelineAPI> { Peer(resources: resources) }
    public var messaging: Peer<MessagingAPI> { Peer(resources: resources) }
    public var notifications: Peer<NotificationsAPI> { Peer(resources: resources) }
    public var media: Peer<MediaAPI> { Peer(resources: resources) }
}

/// The methods of one API (an enum of ``RPCMethod`` descriptors such as `GraphAPI`), each as a
/// member: `peer.followerIds` is `GraphAPI.followerIds`, ready to call.
@dynamicMemberLookup
public struct Peer<API>: Sendable {
    let resources: ServiceResources

    public subscript<Params, Result>(dynamicMember method: KeyPath<API.Type, RPCMethod<Params, Result>>) -> PeerMethod<Params, Result> {
        PeerMethod(resources: resources, method: API.self[keyPath: method])
    }
}

/// One method of another service, bound to the resources that call it.
public struct PeerMethod<Params: Codable & Sendable, Result: Codable & Sendable>: Sendable {
    let resources: ServiceResources
    let method: RPCMethod<Params, Result>

    /// ``ServiceResources/call(_:_:context:passing:)``.
    public func callAsFunction(_ params: Params, context: RPCContext?, passing reasons: Set<String> = []) async throws -> Result {
        try await resources.call(method, params, context: context, passing: reasons)
    }

    /// ``ServiceResources/callEncoded(_:_:context:passing:)``.
    public func encoded(_ params: Params, context: RPCContext?, passing reasons: Set<String> = []) async throws -> RawJSON {
        try await resources.callEncoded(method, params, context: context, passing: reasons)
    }

    /// ``ServiceResources/callEncoded(_:encodedParams:context:passing:)``.
    public func encoded(encodedParams params: RawJSON, context: RPCContext?, passing reasons: Set<String> = []) async throws -> RawJSON {
        try await resources.callEncoded(method, encodedParams: params, context: context, passing: reasons)
    }
}
