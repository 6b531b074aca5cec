import AuthTokens
import AviaryJSON
import Locking
import Logging
import RPC
import Redis
import ServiceLifecycle

/// Live delivery of one service's events to its users' open subscriptions, on every instance.
///
/// - Each user has a Redis channel `aviary:live:<database>:<service>:<userId>` (channels span every
///   database of a server: without the number, two deployments sharing one would see each other's
///   users of the same id). ``publish(to:event:)`` sends an event to those channels (one pipelined
///   round trip). An instance subscribes to the channel of each user who holds a subscription on it
///   (one ``RedisSubscriber`` per hub; on a cluster, sharded pub/sub on the shard of the channel's
///   slot), so an event reaches only the instances that have someone to give it to. It pushes each
///   event to that subscription as the notification `<service>.event` with params
///   `{"subscription": "<id>", "event": <event>}` (contract §1).
/// - Subscriptions live in a local registry (user → connection + subscription id) and leave it when
///   the client unsubscribes, the connection closes, or the sign-in session that opened the
///   subscription is revoked (logout, a password change, a refresh token reused): that one is first
///   sent the event `{"type":"unsubscribed","reason":"unauthenticated"}`. A token is checked when a
///   call arrives; a stream outlives its token's expiry (as a call in flight does) but not its session.
/// - Slow readers: ``RPCConnection/push(method:params:)`` disconnects a peer once 8 MiB were pushed
///   past the socket's high-water mark, so a stalled reader holds at most that backlog (a
///   catch-up's burst fits); the hub itself queues nothing per subscriber except while one is held for a catch-up,
///   and then at most `Options.holdLimit` events.
/// - When the Redis subscriptions reconnect, every local subscription gets the event
///   `{"type": "resync"}`, as does one whose buffer overflowed: events may have been missed, so it
///   should catch up from the source of truth.
///
/// It runs as a `Service` in the process's service group (``ServiceResources/liveHub``).
public final class LiveHub: Service, Sendable {
    /// Tuning of a hub; the defaults suit a service instance with tens of thousands of subscriptions.
    public struct Options: Sendable {
        /// Messages waiting between the Redis subscriber thread and one subscription's delivery
        /// before the oldest are dropped (followed by a resync notice).
        public var bufferSize = 4_096
        /// Events kept for a subscription held during its catch-up before the rest are dropped
        /// (followed by a resync notice).
        public var holdLimit = 1_024
        /// Subscriptions one user may hold on one connection: each gets its own copy of every event,
        /// so more would only multiply what one event costs (a gateway may still carry many users'
        /// subscriptions on one connection).
        public var perUserAndConnection = 8

        public init() {}
    }

    /// A user's first subscription opened on this instance (`online`), or their last one closed.
    public struct PresenceChange: Sendable, Hashable {
        public var userID: Int64
        public var online: Bool

        public init(userID: Int64, online: Bool) {
            self.userID = userID
            self.online = online
        }
    }

    /// The service whose events these are (`notifications`): names the channels and the push method.
    public let service: String
    /// The notification method of pushes: `<service>.event`.
    public let method: String
    private let redis: RedisClient
    private let revocations: SessionRevocations?
    private let logger: Logger
    private let options: Options
    private let registry: LiveRegistry
    private let channelPrefix: String
    private let subscriber: RedisSubscriber

    /// - Parameters:
    ///   - redis: publishes go through its pool; the hub's subscriber opens connections of its own.
    ///   - revocations: whose ``SessionRevocations/endedSessions()`` end the subscriptions of revoked
    ///     sessions while the hub runs; nil only where no user signs in (tests of delivery alone).
    public init(
        service: String, redis: RedisClient, revocations: SessionRevocations?, logger: Logger, options: Options = Options()
    ) {
        self.service = service
        self.method = "\(service).event"
        self.redis = redis
        self.revocations = revocations
        var logger = logger
        logger[metadataKey: "live.service"] = "\(service)"
        self.logger = logger
        self.options = options
        self.registry = LiveRegistry(holdLimit: options.holdLimit)
        self.channelPrefix = "aviary:live:\(redis.configuration.database):\(service):"
        subscriber = RedisSubscriber(configuration: redis.configuration, logger: logger)
    }

    /// Subscriptions one user may hold on one connection (``Options/perUserAndConnection``).
    public var subscriptionsPerUserAndConnection: Int { options.perUserAndConnection }

    /// The Redis channel of `user`'s events.
    public func channel(of user: Int64) -> String {
        channelPrefix + String(user)
    }

    // MARK: Subscriptions

    /// Opens a subscription of `principal`'s user on `connection` and returns its id (nil when the
    /// connection is already closed). Redis has confirmed the user's channel when it returns, so
    /// events published to the user from now on are pushed to it, until `principal`'s session is
    /// revoked. With `holding`, they are kept instead until
    /// ``release(_:user:connection:replay:keep:)``, so that a catch-up read after this call can be
    /// sent first without a gap or a reordering.
    ///
    /// - Throws: `conflict` when the user already holds `Options.perUserAndConnection` subscriptions
    ///   on this connection; `unauthenticated` when the session was revoked since its token was checked;
    ///   `unavailable` when Redis does not confirm the user's channel.
    public func subscribe(_ principal: RPCPrincipal, connection: RPCConnection, holding: Bool = false) async throws(RPCError)
        -> String?
    {
        let (user, session) = (principal.userID, principal.sessionID)
        let registry = self.registry
        let limit = options.perUserAndConnection
        guard registry.count(of: user, on: connection) < limit else {
            throw RPCError.conflict(
                "this connection already holds \(limit) subscriptions of yours, the most it may; end one with \(service).unsubscribe first",
                field: "subscription")
        }
        let channel: RedisSubscription
        do {
            channel = try await subscriber.subscribe(self.channel(of: user), bufferSize: options.bufferSize)
        } catch {
            logger.warning("live delivery cannot subscribe to a user's channel", metadata: ["error": "\(error)"])
            throw RPCError.unavailable("live delivery cannot reach Redis now; retry shortly")
        }
        // The registry entry is added after the id exists: hold the removal until then.
        let box = SubscriptionIDBox()
        guard let id = connection.addSubscription(cancel: { [weak connection] in
            channel.unsubscribe()
            guard let connection, let id = box.id else { return }
            registry.remove(user: user, connection: connection, id: id)
        }) else {
            channel.unsubscribe()
            return nil
        }
        box.id = id
        registry.add(user: user, session: session, connection: connection, id: id, holding: holding)
        Task { await self.deliver(channel, user: user, connection: connection, subscription: id) }
        if !connection.isActive {
            // Closed between the two steps: its cancel may have run before the entry existed.
            registry.remove(user: user, connection: connection, id: id)
            return nil
        }
        // Revoked after the token was checked, and announced before the entry existed: no sweep of
        // endedSessions() saw it. (Announced later, the sweep does.)
        if revocations?.isKnownRevoked(sessionID: session) == true {
            _ = connection.cancelSubscription(id)
            throw RPCError.unauthenticated("the session has ended; sign in again")
        }
        return id
    }

    /// How long after a hold live events still pass the `keep` filter: an event published a moment
    /// after the catch-up read found it stored must not reach the subscriber twice.
    public static let lateEventWindow = Duration.seconds(30)

    /// Ends the hold of a subscription opened with `holding: true`: pushes `replay` in order, then the
    /// live events held meanwhile for which `keep` is true (to drop those `replay` already had), then
    /// resumes live delivery, still through `keep` for ``lateEventWindow``.
    public func release(
        _ subscription: String, user: Int64, connection: RPCConnection, replay: [RawJSON],
        keep: @escaping @Sendable (RawJSON) -> Bool = { _ in true }
    ) {
        let method = self.method
        let filter = LiveRegistry.LateEventFilter(keep: keep, until: .now + Self.lateEventWindow)
        registry.release(user: user, connection: connection, id: subscription, filter: filter) { held, overflowed in
            for event in replay {
                connection.push(method: method, params: Self.params(subscription: subscription, event: event))
            }
            for event in held where keep(event) {
                connection.push(method: method, params: Self.params(subscription: subscription, event: event))
            }
            if overflowed {
                connection.push(method: method, params: Self.params(subscription: subscription, event: Self.resync))
            }
        }
    }

    /// Ends the caller's subscription on the call's connection: the `<service>.unsubscribe` methods.
    /// `not_found` when the caller holds no such subscription there (another user's on the same
    /// connection, such as a gateway's, is not theirs to end).
    public func unsubscribe(_ subscription: String, context: RPCContext) throws(RPCError) {
        let user = try context.requireUser()
        guard let connection = context.connection, unsubscribe(subscription, user: user, connection: connection) else {
            // The id as sent may be up to a frame long: the start of it is enough to recognise.
            throw RPCError.notFound("no subscription \(subscription.prefix(40)) is open on this connection")
        }
    }

    /// Ends `user`'s subscription on `connection`; false when `user` holds no such subscription there.
    public func unsubscribe(_ subscription: String, user: Int64, connection: RPCConnection) -> Bool {
        registry.holds(user: user, connection: connection, id: subscription) && connection.cancelSubscription(subscription)
    }

    /// Ends the subscriptions opened by any of `sessions`, each after the event
    /// `{"type":"unsubscribed","reason":"unauthenticated"}`.
    func endSubscriptions(ofSessions sessions: [Int64]) {
        for (connection, subscription) in registry.subscriptions(ofSessions: Set(sessions)) {
            connection.push(method: method, params: Self.params(subscription: subscription, event: Self.sessionEnded))
            _ = connection.cancelSubscription(subscription)
        }
    }

    /// Whether `user` has a subscription open on this instance.
    public func isConnectedHere(_ user: Int64) -> Bool {
        registry.isConnected(user)
    }

    /// The users with a subscription open on this instance.
    public var connectedUsersHere: [Int64] { registry.connectedUsers }

    /// How many subscriptions are open on this instance.
    public var subscriptionCount: Int { registry.count }

    /// A new stream of this instance's presence changes (it keeps the 4,096 latest when not read).
    public func presenceChanges() -> AsyncStream<PresenceChange> {
        registry.presenceChanges()
    }

    // MARK: Publishing

    /// Sends `event` to every subscription of each of `users`, on every instance, in one pipelined
    /// round trip to Redis. Events published by one caller reach a subscriber in publishing order.
    public func publish(to users: [Int64], event: RawJSON) async throws {
        guard !users.isEmpty else { return }
        _ = try await redis.pipeline(publishCommands(to: users, event: event))
    }

    /// The commands ``publish(to:event:)`` sends, for a caller that pipelines them with its own.
    public func publishCommands(to users: [Int64], event: RawJSON) -> [[RedisArgument]] {
        let payload = RedisArgument(event.bytes)
        return users.map { redis.configuration.publish(payload, to: channel(of: $0)) }
    }

    /// Sends different events to different users in one pipelined round trip.
    public func publish(_ events: [(user: Int64, event: RawJSON)]) async throws {
        guard !events.isEmpty else { return }
        _ = try await redis.pipeline(events.map { redis.configuration.publish(RedisArgument($0.event.bytes), to: channel(of: $0.user)) })
    }

    // MARK: Delivery

    static let resync = RawJSON(unchecked: Array(#"{"type":"resync"}"#.utf8))
    static let sessionEnded = RawJSON(unchecked: Array(#"{"type":"unsubscribed","reason":"unauthenticated"}"#.utf8))

    static func params(subscription: String, event: RawJSON) -> RawJSON {
        var bytes = Array(#"{"subscription":""#.utf8)
        bytes.reserveCapacity(bytes.count + subscription.utf8.count + event.bytes.count + 12)
        bytes.append(contentsOf: subscription.utf8)
        bytes.append(contentsOf: Array(#"","event":"#.utf8))
        bytes.append(contentsOf: event.bytes)
        bytes.append(UInt8(ascii: "}"))
        return RawJSON(unchecked: bytes)
    }

    /// Pushes the messages of the user's channel to one subscription until it ends; a resync
    /// notice follows messages dropped for want of buffer.
    private func deliver(_ channel: RedisSubscription, user: Int64, connection: RPCConnection, subscription: String) async {
        var dropped = 0
        for await message in channel {
            let event = RawJSON(unchecked: message.payload)
            if registry.takes(event, user: user, connection: connection, id: subscription) {
                connection.push(method: method, params: Self.params(subscription: subscription, event: event))
            }
            let nowDropped = channel.droppedMessageCount
            if nowDropped != dropped {
                dropped = nowDropped
                connection.push(method: method, params: Self.params(subscription: subscription, event: Self.resync))
            }
        }
    }

    /// Tells every local subscription it may have missed events.
    func announceResync() {
        for (connection, subscription) in registry.all {
            connection.push(method: method, params: Self.params(subscription: subscription, event: Self.resync))
        }
    }

    /// Ends subscriptions of revoked sessions and announces resyncs until the service group shuts
    /// down or the task is cancelled; then ends every subscription's Redis channel.
    public func run() async throws {
        let subscriber = self.subscriber
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { tasks in
                if let revocations {
                    tasks.addTask {
                        // The stream never ends by itself: the shutdown (or the task's cancellation) ends the loop.
                        await cancelWhenGracefulShutdown {
                            for await sessions in revocations.endedSessions() { self.endSubscriptions(ofSessions: sessions) }
                        }
                    }
                }
                tasks.addTask {
                    for await event in subscriber.events() where event == .reconnected {
                        self.logger.info("live delivery reconnected to Redis; subscribers are told to resync")
                        self.announceResync()
                    }
                }
            }
        } onGracefulShutdown: {
            Task { await subscriber.shutdown() }
        }
        await subscriber.shutdown()
        registry.finishPresence()
    }
}

/// The subscription id, set once `addSubscription` returned it, for the cancel closure made before.
private final class SubscriptionIDBox: Sendable {
    private let value = Locked<String?>(nil)

    var id: String? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
