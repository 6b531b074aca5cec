import AviaryAPI
import AviaryJSON
import ChannelSupport
import Foundation
import Locking
import Logging
import RPC
import WSClient

/// An app's connection to Aviary: one WebSocket to a gateway (`GET /rpc`) carrying every call and
/// the live events, built on swift-websocket's client (SwiftNIO), so it runs on Linux and on Apple
/// platforms alike.
///
/// - Calls: ``call(_:_:)`` for a method the contract names (`TweetsAPI.create`, …), or
///   ``call(_:params:as:)`` by name for any public method (see `docs/api.md`). Errors are the
///   contract's, as `RPCError` (code, message, reason, field).
/// - Session: ``register(_:)`` or ``signIn(login:password:)`` starts one; every call then carries its
///   access token, which is renewed with the refresh token shortly before it expires, and once more
///   when a call finds it expired.
/// - Live events: ``notifications(after:)`` and ``messagingEvents()`` are `AsyncSequence`s that
///   outlive the socket: after a reconnect they subscribe again, notifications from the last one
///   received (nothing missed, nothing twice), messaging anew.
///
/// The socket reconnects by itself, waiting longer after each failure (up to
/// ``Configuration/maxReconnectDelay``); a call made while it is down waits for it, within its
/// time. Calls in flight when it drops fail with `unavailable`: retry those that are safe to.
public final class AviaryClient: Sendable {
    public struct Configuration: Sendable {
        /// The gateway's public URL: `http://host:8080` or `https://…` (`ws:`/`wss:` work too).
        public var gateway: String
        /// How long a call waits for its answer, the wait for a connection included.
        public var callTimeout: Duration = .seconds(15)
        /// The largest message accepted from the gateway.
        public var maxMessageBytes = 8 << 20
        /// The first pause before reconnecting; it doubles after each failed attempt.
        public var reconnectDelay: Duration = .milliseconds(200)
        public var maxReconnectDelay: Duration = .seconds(10)
        /// How long before its expiry an access token is renewed.
        public var refreshMargin: Duration = .seconds(30)

        public init(gateway: String) {
            self.gateway = gateway
        }
    }

    /// A signed-in user and their tokens.
    public struct Session: Sendable {
        public var user: User
        public var accessToken: String
        public var refreshToken: String
        public var expiresAt: Date
    }

    let configuration: Configuration
    let logger: Logger
    let link: ClientLink
    private let session = Locked<Session?>(nil)
    /// The refresh in progress, which every call that needs one waits for.
    private let refreshing = Locked<Task<Session, any Error>?>(nil)

    public init(configuration: Configuration, logger: Logger = Logger(label: "aviary-client")) {
        self.configuration = configuration
        self.logger = logger
        link = ClientLink(configuration: configuration, logger: logger)
    }

    /// Closes the socket and ends the live event sequences; later calls fail with `unavailable`.
    public func close() async {
        await link.close()
    }

    /// The current session, if signed in.
    public var currentSession: Session? { session.withLock { $0 } }

    // MARK: Session

    /// Creates an account and signs it in.
    @discardableResult
    public func register(_ params: RegisterParams) async throws -> Session {
        start(try await link.call(SessionAPI.register, params, token: nil))
    }

    /// Signs in with an email or username and a password.
    @discardableResult
    public func signIn(login: String, password: String) async throws -> Session {
        start(try await link.call(SessionAPI.login, LoginParams(login: login, password: password), token: nil))
    }

    /// Adopts a session kept from an earlier run (its tokens), without a call.
    public func resume(_ session: Session) {
        self.session.withLock { $0 = session }
    }

    /// Renews the access token now with the refresh token (calls do it by themselves when needed).
    @discardableResult
    public func refreshSession() async throws -> Session {
        let task = refreshing.withLock { running -> Task<Session, any Error> in
            if let running { return running }
            let task = Task { () async throws -> Session in
                defer { self.refreshing.withLock { $0 = nil } }
                guard var current = self.session.withLock({ $0 }) else {
                    throw RPCError.unauthenticated("sign in first: there is no session to renew")
                }
                let pair = try await self.link.call(
                    SessionAPI.refresh, RefreshParams(refreshToken: current.refreshToken), token: nil)
                current.accessToken = pair.accessToken
                current.refreshToken = pair.refreshToken
                current.expiresAt = pair.expiresAt
                self.session.withLock { $0 = current }
                return current
            }
            running = task
            return task
        }
        return try await task.value
    }

    private func start(_ result: AuthResult) -> Session {
        let started = Session(
            user: result.user, accessToken: result.accessToken, refreshToken: result.refreshToken, expiresAt: result.expiresAt)
        session.withLock { $0 = started }
        return started
    }

    /// The access token to send, renewed first when it is about to expire; nil when signed out.
    func token() async throws -> String? {
        guard let current = session.withLock({ $0 }) else { return nil }
        let margin = Double(configuration.refreshMargin.milliseconds) / 1000
        if current.expiresAt.timeIntervalSinceNow < margin { return try await refreshSession().accessToken }
        return current.accessToken
    }

    // MARK: Calls

    /// Calls `method` as the signed-in user (or anonymously), renewing an expired token once.
    @discardableResult
    public func call<Params, Result>(_ method: RPCMethod<Params, Result>, _ params: Params) async throws -> Result {
        try await authorized { token in try await self.link.call(method, params, token: token) }
    }

    /// Calls the public method `method` by name with `params` (an `Encodable` object), decoding the
    /// result as `type`.
    public func call<Result: Decodable & Sendable>(
        _ method: String, params: some Encodable & Sendable = Empty(), as type: Result.Type = Result.self
    ) async throws -> Result {
        try await authorized { token in
            try await self.link.send(method, params: RawJSON(encoding: params), token: token).decode(type)
        }
    }

    private func authorized<T>(_ body: (String?) async throws -> T) async throws -> T {
        let token = try await token()
        do {
            return try await body(token)
        } catch let error as RPCError where error.reason == "unauthenticated" && token != nil {
            // Expired between the check and the call (or revoked: then the refresh fails too).
            return try await body(try await refreshSession().accessToken)
        }
    }

    // MARK: Live events

    /// The signed-in user's notifications as they are made (`{type, notification}`, `withdrawn`,
    /// `resync`; see `notifications.subscribe`), after `lastId` when given. After a reconnect the
    /// sequence goes on from the last notification it delivered.
    public func notifications(after lastId: String? = nil) -> AsyncThrowingStream<JSONValue, any Error> {
        link.follow(LiveFeed.Kind.notifications, lastId: lastId, client: self)
    }

    /// The signed-in user's messaging events (`message`, `typing`, `read`, `presence`,
    /// `conversation`; see `messaging.subscribe`). After a reconnect it subscribes again and sends
    /// `{type: "resync"}` first, as messages may have come meanwhile: load the history.
    public func messagingEvents() -> AsyncThrowingStream<JSONValue, any Error> {
        link.follow(LiveFeed.Kind.messaging, lastId: nil, client: self)
    }
}
