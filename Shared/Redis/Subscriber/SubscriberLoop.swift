import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The body of the subscriber's thread: owns the pub/sub connections, keeps Redis's subscriptions in
/// line with the registry's, delivers messages, and reconnects with backoff.
///
/// On one server (or Sentinel's master) there is one connection. On a cluster each channel is
/// subscribed with `SSUBSCRIBE` on the master of its slot, so there is one connection per master
/// that holds a subscribed channel; the slot map is read with `CLUSTER SHARDS` before the first
/// subscription and again after a connection drops, a reply is an error (`MOVED`), or Redis drops
/// a channel whose slot moved (an `sunsubscribe` nobody asked for). The owner a `MOVED` names
/// overrides the maps read after it until one agrees: while a slot moves, a map may come from a
/// node that has not heard of it yet.
///
/// It sleeps in `poll(2)` on the connections' sockets and the registry's wake-up pipe, so a
/// subscribe or unsubscribe from another thread is written at once, and messages are read as soon
/// as they arrive. Its work per pass is proportional to the channels that changed.
struct SubscriberLoop {
    /// What has been sent for one channel on its connection.
    private struct Sent {
        /// Whether the last command sent was a subscribe rather than an unsubscribe.
        var isSubscribed: Bool
        /// Commands sent whose confirmation has not arrived yet.
        var unconfirmed: Int
    }

    /// Which connection: the server's, or that of one master of a cluster.
    private enum LinkKey: Hashable, CustomStringConvertible {
        case server
        case node(RedisEndpoint)

        var description: String {
            switch self {
            case .server: "server"
            case .node(let endpoint): endpoint.description
            }
        }
    }

    /// One connection and what was sent on it.
    private struct Link {
        let connection: RedisConnection
        var sent: [String: Sent] = [:]
    }

    /// A channel taken from the registry and not yet acted on.
    private struct Change {
        var wanted: Bool
        var confirmed: Bool
    }

    static let initialBackoff = Duration.milliseconds(100)
    static let maximumBackoff = Duration.seconds(5)

    private let registry: SubscriberRegistry
    private let sharded: Bool
    private var logger: Logger { registry.logger }
    private var links: [LinkKey: Link] = [:]
    /// The link each channel's last command went to.
    private var placement: [String: LinkKey] = [:]
    private var pending: [String: Change] = [:]
    /// The cluster's slot map; nil until read, and again once it is known to be stale.
    private var slotMap: RedisCluster.SlotMap?
    /// The nodes of the last map read, asked first for the next one.
    private var knownNodes: [RedisEndpoint] = []
    /// Slots whose owner a refused subscription's `MOVED` named, over the maps read since.
    private var redirects: [Int: RedisEndpoint] = [:]
    private var backoff = Self.initialBackoff
    private var nextConnectAttempt = ContinuousClock.now
    /// Set when subscriptions were lost, until every wanted channel is confirmed again.
    private var owesReconnectedEvent = false

    init(registry: SubscriberRegistry) {
        self.registry = registry
        sharded = registry.configuration.hasShardedChannels
    }

    mutating func run() {
        while !registry.isShuttingDown {
            for change in registry.takeChanges() {
                pending[change.channel] = Change(wanted: change.wanted, confirmed: change.confirmed)
            }
            if !pending.isEmpty {
                sendPendingChanges()
            }
            announceReconnectionIfComplete()
            let error = RedisError(
                links.isEmpty ? .connectionFailed : .timeout, detail: "Redis did not confirm the subscription in time")
            let nextWaiterDeadline = registry.expireWaiters(now: .now, error: error)
            let retry = pending.isEmpty ? nil : nextConnectAttempt
            waitForEvents(until: [nextWaiterDeadline, retry].compactMap { $0 }.min())
        }
        links = [:]
        registry.finishAll()
    }

    // MARK: Sending

    /// Sends a subscribe for each pending wanted channel not subscribed on its link and an
    /// unsubscribe for each pending dropped one. A channel whose link cannot be reached stays
    /// pending until the next attempt, after the backoff.
    private mutating func sendPendingChanges() {
        var commands: [LinkKey: [[RedisArgument]]] = [:]
        var mayConnect = ContinuousClock.now >= nextConnectAttempt
        for (channel, change) in pending {
            let placed = placement[channel]
            let sent = placed.flatMap { links[$0]?.sent[channel] }
            if !change.wanted {
                if let placed, sent?.isSubscribed == true {
                    commands[placed, default: []].append([sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", RedisArgument(channel)])
                    links[placed]!.sent[channel]!.isSubscribed = false
                    links[placed]!.sent[channel]!.unconfirmed += 1
                }
                pending[channel] = nil
                continue
            }
            if let sent, sent.isSubscribed {
                // Dropped and wanted again before the thread looked: it never left Redis.
                if sent.unconfirmed == 0, !change.confirmed { registry.confirm(channel) }
                pending[channel] = nil
                continue
            }
            guard mayConnect else { continue }
            guard let key = link(for: channel) else {
                mayConnect = false
                scheduleReconnect()
                continue
            }
            commands[key, default: []].append([sharded ? "SSUBSCRIBE" : "SUBSCRIBE", RedisArgument(channel)])
            links[key]!.sent[channel, default: Sent(isSubscribed: true, unconfirmed: 0)].isSubscribed = true
            links[key]!.sent[channel]!.unconfirmed += 1
            placement[channel] = key
            pending[channel] = nil
        }
        if mayConnect, pending.isEmpty { backoff = Self.initialBackoff }
        for (key, batch) in commands {
            perform(on: key) { connection throws(RedisConnection.Failure) in
                for command in batch { try connection.append(command) }
                while try !connection.flushOnce() {}
            }
        }
    }

    /// The link `channel` is subscribed on, connected now when it is not yet; nil when that fails.
    private mutating func link(for channel: String) -> LinkKey? {
        let configuration = registry.configuration
        let key: LinkKey
        if sharded {
            if slotMap == nil, var map = readSlotMap() {
                for (slot, owner) in redirects {
                    if map.owner(of: slot) == owner { redirects[slot] = nil } else { map.move(slot, to: owner) }
                }
                slotMap = map
            }
            guard let owner = slotMap?.owner(of: RedisSlot.of(channel)) else {
                slotMap = nil
                return nil
            }
            key = .node(owner)
        } else {
            key = .server
        }
        if links[key] != nil { return key }
        do {
            let connection =
                switch key {
                case .server: try RedisConnection.connect(configuration)
                case .node(let endpoint): try RedisConnection.connect(configuration.server(at: endpoint))
                }
            links[key] = Link(connection: connection)
            logger.debug("Redis subscriber connected", metadata: ["redis.node": "\(key)"])
            return key
        } catch {
            logger.warning(
                "Redis subscriber could not connect; retrying",
                metadata: ["redis.node": "\(key)", "error": "\(String(reflecting: error))", "retry.in": "\(backoff)"])
            slotMap = nil
            redirects = [:]
            return nil
        }
    }

    /// The cluster's slot map from the first node that answers `CLUSTER SHARDS`: the nodes of the
    /// last map, then the seeds. A subscribed connection cannot ask, so each asks on its own.
    private mutating func readSlotMap() -> RedisCluster.SlotMap? {
        guard case .cluster(let seeds) = registry.configuration.deployment else { return nil }
        var asked = Set<RedisEndpoint>()
        for endpoint in knownNodes + seeds where asked.insert(endpoint).inserted {
            do {
                let connection = try RedisConnection.connect(registry.configuration.server(at: endpoint))
                if let map = RedisCluster.slotMap(shards: try connection.execute([["CLUSTER", "SHARDS"]])[0]) {
                    knownNodes = map.masters + map.replicas
                    return map
                }
            } catch {
                continue
            }
        }
        logger.warning("Redis subscriber found no node of the cluster that tells the slot map")
        return nil
    }

    private mutating func scheduleReconnect() {
        nextConnectAttempt = .now + backoff
        backoff = min(backoff * 2, Self.maximumBackoff)
    }

    /// Runs `body` on the link's connection; on failure drops the link.
    private mutating func perform(on key: LinkKey, _ body: (RedisConnection) throws(RedisConnection.Failure) -> Void) {
        guard let link = links[key] else { return }
        do {
            try body(link.connection)
        } catch {
            drop(key, reason: "lost its connection", error: String(reflecting: error.error))
        }
    }

    /// Forgets a link whose subscriptions are gone: its wanted channels are subscribed again (on a
    /// cluster, after reading the slot map again) once the backoff has passed.
    private mutating func drop(_ key: LinkKey, reason: String, error: String) {
        guard let link = links.removeValue(forKey: key) else { return }
        logger.warning("Redis subscriber \(reason); subscribing again", metadata: ["redis.node": "\(key)", "error": "\(error)"])
        for channel in link.sent.keys where placement[channel] == key { placement[channel] = nil }
        registry.subscriptionsLost(link.sent.keys)
        subscriptionsLost()
    }

    /// Messages may have been missed: say so now, and say when every channel is back.
    private mutating func subscriptionsLost() {
        if sharded { slotMap = nil }
        if !owesReconnectedEvent { registry.emit(.disconnected) }
        owesReconnectedEvent = true
        scheduleReconnect()
    }

    // MARK: Receiving

    private mutating func waitForEvents(until deadline: ContinuousClock.Instant?) {
        let keys = Array(links.keys)
        let descriptors = [(registry.wakeUpDescriptor, Int16(POLLIN))] + keys.map { (links[$0]!.connection.fileDescriptor, Int16(POLLIN)) }
        let events = Posix.poll(descriptors, timeout: deadline.map { $0 - .now })
        if events[0] != 0 {
            registry.drainWakeUps()
        }
        for (index, key) in keys.enumerated() where events[index + 1] != 0 {
            var replies: [RESPValue] = []
            perform(on: key) { connection throws(RedisConnection.Failure) in
                // Readable after poll, so this read does not block; EOF and errors throw.
                try connection.readFromSocket()
                while let reply = try connection.nextBufferedReply() { replies.append(reply) }
            }
            for reply in replies where links[key] != nil {
                handle(reply, on: key)
            }
        }
    }

    private mutating func handle(_ reply: RESPValue, on key: LinkKey) {
        if case .error(let message) = reply {
            // A subscription the node would not take (its slot moved): start over with a fresh map,
            // and the owner the node names.
            if case .moved(let slot, let owner)? = RedisCluster.Redirection(message) { redirects[slot] = owner }
            drop(key, reason: "had a subscription refused", error: message)
            return
        }
        guard let items = reply.array, let kind = items.first?.string, items.count >= 3 else {
            logger.warning("Unexpected reply on the Redis subscriber connection", metadata: ["reply": "\(reply)"])
            return
        }
        let channel = items[1].string ?? ""
        switch kind {
        case "message", "smessage":
            registry.deliver(RedisMessage(channel: channel, payload: items[2].bytes ?? []), to: channel)
        case "subscribe", "unsubscribe", "ssubscribe":
            acknowledge(channel, on: key)
        case "sunsubscribe":
            if links[key]?.sent[channel].map({ $0.isSubscribed && $0.unconfirmed == 0 }) == true {
                // Not asked for: the cluster moved the channel's slot to another shard.
                links[key]!.sent[channel] = nil
                placement[channel] = nil
                registry.subscriptionsLost([channel])
                subscriptionsLost()
            } else {
                acknowledge(channel, on: key)
            }
        default:
            logger.debug("Ignoring a reply on the Redis subscriber connection", metadata: ["redis.reply.kind": "\(kind)"])
        }
    }

    /// One (un)subscribe confirmation arrived; once none is outstanding the channel's state is final.
    private mutating func acknowledge(_ channel: String, on key: LinkKey) {
        guard var state = links[key]?.sent[channel] else { return }
        state.unconfirmed -= 1
        if state.unconfirmed > 0 {
            links[key]!.sent[channel] = state
        } else if state.isSubscribed {
            links[key]!.sent[channel] = state
            registry.confirm(channel)
        } else {
            links[key]!.sent[channel] = nil
            if placement[channel] == key { placement[channel] = nil }
        }
    }

    private mutating func announceReconnectionIfComplete() {
        guard owesReconnectedEvent, pending.isEmpty, registry.isEverythingConfirmed else { return }
        owesReconnectedEvent = false
        logger.info("Redis subscriber reconnected and re-subscribed")
        registry.emit(.reconnected)
    }
}
