import ChannelSupport
import Logging

/// Who is calling, as established by the router before a handler runs.
public struct RPCPrincipal: Sendable, Hashable {
    public var userID: Int64
    public var sessionID: Int64

    public init(userID: Int64, sessionID: Int64) {
        self.userID = userID
        self.sessionID = sessionID
    }
}

/// Everything a handler knows about the call besides its params.
public struct RPCContext: Sendable {
    public let method: String
    public let meta: RequestMeta
    public var logger: Logger
    /// When the caller's `timeoutMs` budget runs out.
    public let deadline: ContinuousClock.Instant?
    /// The authenticated user, for methods that take a token.
    public let principal: RPCPrincipal?
    /// Whether the caller presented the service credential.
    public let isService: Bool
    /// The connection the call came on; `nil` for calls made without a socket (tests, batches of one process).
    public let connection: RPCConnection?
    /// On a method anyone may call: the caller sent a token that could not be checked right now
    /// (its session's revocation unknown, Redis down), so the call runs as anonymous. A handler
    /// whose answer to an anonymous caller would be final and wrong for the token's user (not
    /// found, for what only they may see) answers ``RPCError/unavailable(_:)`` instead.
    public let tokenUnchecked: Bool

    public init(
        method: String, meta: RequestMeta = RequestMeta(), logger: Logger, deadline: ContinuousClock.Instant? = nil,
        principal: RPCPrincipal? = nil, isService: Bool = false, connection: RPCConnection? = nil, tokenUnchecked: Bool = false
    ) {
        self.method = method
        self.meta = meta
        self.logger = logger
        self.deadline = deadline
        self.principal = principal
        self.isService = isService
        self.connection = connection
        self.tokenUnchecked = tokenUnchecked
    }

    /// The address of the client the call is made for, for per-address limits: the one the public
    /// edge names in `_meta.clientAddress` when the call carries the service credential, else the
    /// socket's peer. A client cannot name an address of its choosing.
    public var clientAddress: String? {
        if isService, let forwarded = meta.clientAddress { return forwarded }
        return connection?.remoteAddress
    }

    /// The caller's user id; throws `unauthenticated` for anonymous calls.
    public func requireUser() throws(RPCError) -> Int64 {
        try requirePrincipal().userID
    }

    /// The caller's user and session; throws `unauthenticated` for anonymous calls.
    public func requirePrincipal() throws(RPCError) -> RPCPrincipal {
        guard let principal else { throw .unauthenticated() }
        return principal
    }

    /// The budget left for a downstream call, for `_meta.timeoutMs`.
    public var remainingMilliseconds: Int64? {
        guard let deadline else { return nil }
        return max(0, ContinuousClock.now.duration(to: deadline).milliseconds)
    }

    /// `_meta` for a call this handler makes to another service: the trace and the remaining budget travel on.
    public func downstreamMeta(token: String? = nil, service: String? = nil) -> RequestMeta {
        RequestMeta(token: token, service: service, traceparent: meta.childTraceparent, timeoutMs: remainingMilliseconds)
    }
}
