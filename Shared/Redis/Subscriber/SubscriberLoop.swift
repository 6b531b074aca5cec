import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The body of the subscriber's thread: owns the pub/sub connection, keeps Redis's subscriptions in line
/// with the registry's, delivers messages, and reconnects with backoff.
///
/// It sleeps in `poll(2)` on the hiredis socket and the registry's wake-up pipe, so a subscribe or
/// unsubscribe from another thread is written at once, and messages are read as soon as they arrive.
struct SubscriberLoop {
    /// What has been sent for one channel or pattern on the current connection.
    private struct Sent {
        /// Whether the last command sent was (P)SUBSCRIBE rather than (P)UNSUBSCRIBE.
        var isSubscribed: Bool
        /// Commands sent whose confirmation has not arrived yet.
        var unconfirmed: Int
    }

    static let initialBackoff = Duration.milliseconds(100)
    static let maximumBackoff = Duration.seconds(5)

    private let registry: SubscriberRegistry
    private var logger: Logger { registry.logger }
    private var connection: RedisConnection?
    private var sent: [SubscriptionTopic: Sent] = [:]
    private var backoff = Self.initialBackoff
    private var nextConnectAttempt = ContinuousClock.now
    private var hasConnected = false
    /// Set after a reconnection until every wanted topic is confirmed again.
    private var owesReconnectedEvent = false

    init(registry: SubscriberRegistry) {
        self.registry = registry
    }

    mutating func run() {
        while !registry.isShuttingDown {
            if connection == nil, ContinuousClock.now >= nextConnectAttempt {
                connect()
            }
            if connection != nil {
                perform { loop, connection throws(RedisConnection.Failure) in
                    try loop.sendSubscriptionChanges(on: connection)
                }
            }
            announceReconnectionIfComplete()
            let error = RedisError(
                connection == nil ? .connectionFailed : .timeout,
                detail: "Redis did not confirm the subscription in time")
            let nextWaiterDeadline = registry.expireWaiters(now: .now, error: error)
            let reconnectTime = connection == nil ? nextConnectAttempt : nil
            waitForEvents(until: [nextWaiterDeadline, reconnectTime].compactMap { $0 }.min())
        }
        connection = nil
        registry.finishAll()
    }

    private mutating func connect() {
        do {
            connection = try RedisConnection.connect(registry.configuration)
            sent = [:]
            backoff = Self.initialBackoff
            owesReconnectedEvent = hasConnected
            hasConnected = true
            logger.debug("Redis subscriber connected")
        } catch {
            logger.warning(
                "Redis subscriber could not connect; retrying",
                metadata: [
                    "error": "\(String(reflecting: error))", "retry.in": "\(backoff)",
                ])
            scheduleReconnect()
        }
    }

    private mutating func scheduleReconnect() {
        nextConnectAttempt = .now + backoff
        backoff = min(backoff * 2, Self.maximumBackoff)
    }

    /// Runs `body` on the connection; on failure drops the connection and schedules a reconnection.
    private mutating func perform(
        _ body: (inout SubscriberLoop, RedisConnection) throws(RedisConnection.Failure) -> Void
    ) {
        guard let connection else { return }
        do {
            try body(&self, connection)
        } catch {
            logger.warning(
                "Redis subscriber lost its connection; reconnecting",
                metadata: [
                    "error": "\(String(reflecting: error.error))"
                ])
            self.connection = nil
            sent = [:]
            registry.connectionLost()
            registry.emit(.disconnected)
            scheduleReconnect()
        }
    }

    /// Sends (P)SUBSCRIBE for wanted topics not yet subscribed and (P)UNSUBSCRIBE for those nobody wants.
    private mutating func sendSubscriptionChanges(on connection: RedisConnection) throws(RedisConnection
        .Failure)
    {
        let (wanted, unconfirmed) = registry.wantedTopics
        // A topic dropped and wanted again between two passes never left Redis: confirm it as it is.
        for topic in unconfirmed where sent[topic].map({ $0.isSubscribed && $0.unconfirmed == 0 }) == true {
            registry.confirm(topic)
        }
        var commands: [String: [RedisArgument]] = [:]
        for topic in wanted where sent[topic]?.isSubscribed != true {
            let (command, name) = Self.command(topic, subscribe: true)
            commands[command, default: []].append(RedisArgument(name))
            sent[topic, default: Sent(isSubscribed: true, unconfirmed: 0)].isSubscribed = true
            sent[topic]!.unconfirmed += 1
        }
        for (topic, state) in sent where state.isSubscribed && !wanted.contains(topic) {
            let (command, name) = Self.command(topic, subscribe: false)
            commands[command, default: []].append(RedisArgument(name))
            sent[topic]!.isSubscribed = false
            sent[topic]!.unconfirmed += 1
        }
        guard !commands.isEmpty else { return }
        for (command, names) in commands {
            try connection.append([RedisArgument(command)] + names)
        }
        while try !connection.flushOnce() {}
    }

    private static func command(_ topic: SubscriptionTopic, subscribe: Bool) -> (String, String) {
        switch topic {
        case .channel(let name): (subscribe ? "SUBSCRIBE" : "UNSUBSCRIBE", name)
        case .pattern(let name): (subscribe ? "PSUBSCRIBE" : "PUNSUBSCRIBE", name)
        }
    }

    private mutating func waitForEvents(until deadline: ContinuousClock.Instant?) {
        var descriptors: [(fd: Int32, events: Int16)] = [(registry.wakeUpDescriptor, Int16(POLLIN))]
        if let connection {
            descriptors.append((connection.fileDescriptor, Int16(POLLIN)))
        }
        let events = Posix.poll(descriptors, timeout: deadline.map { $0 - .now })
        if events[0] != 0 {
            registry.drainWakeUps()
        }
        if events.count > 1, events[1] != 0 {
            perform { loop, connection throws(RedisConnection.Failure) in
                // Readable after poll, so this read does not block; EOF and errors throw.
                try connection.readFromSocket()
                while let reply = try connection.nextBufferedReply() {
                    loop.handle(reply)
                }
            }
        }
    }

    private mutating func handle(_ reply: RESPValue) {
        guard let items = reply.array, let kind = items.first?.string, items.count >= 3 else {
            logger.warning(
                "Unexpected reply on the Redis subscriber connection", metadata: ["reply": "\(reply)"])
            return
        }
        let name = items[1].string ?? ""
        switch kind {
        case "message":
            registry.deliver(RedisMessage(channel: name, payload: items[2].bytes ?? []), to: .channel(name))
        case "pmessage" where items.count >= 4:
            let channel = items[2].string ?? ""
            registry.deliver(
                RedisMessage(channel: channel, payload: items[3].bytes ?? []), to: .pattern(name))
        case "subscribe", "unsubscribe":
            acknowledge(.channel(name))
        case "psubscribe", "punsubscribe":
            acknowledge(.pattern(name))
        default:
            logger.debug(
                "Ignoring a reply on the Redis subscriber connection",
                metadata: ["redis.reply.kind": "\(kind)"])
        }
    }

    /// One (un)subscribe confirmation arrived; once none is outstanding the topic's state is final.
    private mutating func acknowledge(_ topic: SubscriptionTopic) {
        guard var state = sent[topic] else { return }
        state.unconfirmed -= 1
        if state.unconfirmed > 0 {
            sent[topic] = state
        } else if state.isSubscribed {
            sent[topic] = state
            registry.confirm(topic)
        } else {
            sent[topic] = nil
        }
    }

    private mutating func announceReconnectionIfComplete() {
        guard owesReconnectedEvent, connection != nil, registry.isEverythingConfirmed else { return }
        owesReconnectedEvent = false
        logger.info("Redis subscriber reconnected and re-subscribed")
        registry.emit(.reconnected)
    }
}
