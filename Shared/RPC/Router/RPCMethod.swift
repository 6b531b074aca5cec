import AviaryJSON

/// A method of the contract, named once: its wire name, who may call it, what it does, and the
/// types of its params and its result. Servers register their handler for it
/// (``RPCRouter/register(_:summary:handler:)``), other services call it through it, and the
/// OpenRPC document (so the API reference) is made from what was registered.
public struct RPCMethod<Params: Codable & Sendable, Result: Codable & Sendable>: Sendable {
    /// `<prefix>.<method>`, the prefix naming the service (`graph.followerIds`).
    public let name: String
    public let access: RPCAccess
    public let summary: String

    public init(_ name: String, access: RPCAccess, summary: String) {
        self.name = name
        self.access = access
        self.summary = summary
    }

    /// The service's part of the name: `graph` of `graph.followerIds`.
    public var prefix: Substring { name.prefix { $0 != "." } }
}

extension RPCRouter {
    /// Registers `method`'s handler; `summary`, when given, replaces the descriptor's (for one that
    /// quotes a configured limit).
    public mutating func register<Params, Result>(
        _ method: RPCMethod<Params, Result>, summary: String? = nil,
        handler: @escaping @Sendable (Params, RPCContext) async throws -> Result
    ) {
        register(method.name, summary: summary ?? method.summary, access: method.access, handler: handler)
    }

    /// Registers a handler that answers `method`'s result already encoded (a page kept as bytes).
    public mutating func register<Params, Result>(
        _ method: RPCMethod<Params, Result>, summary: String? = nil,
        encoded handler: @escaping @Sendable (Params, RPCContext) async throws -> RawJSON
    ) {
        register(
            method.name, summary: summary ?? method.summary, access: method.access, resultShape: Result.self,
            handler: handler)
    }
}
