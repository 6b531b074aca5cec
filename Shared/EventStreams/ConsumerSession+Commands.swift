import ChannelSupport
import Logging
import Metrics
import Redis

/// The Redis commands of a consumer session.
extension ConsumerSession {
    func createGroup() async throws {
        do {
            let start = try await startOfNewGroup()
            _ = try await redis.send(["XGROUP", "CREATE", RedisArgument(key), RedisArgument(group), RedisArgument(start), "MKSTREAM"])
            logger.info(
                start == "0"
                    ? "created the consumer group, starting at the beginning of the stream"
                    : "created the consumer group where the groups it takes over from stood",
                metadata: ["events.start": "\(start)"])
        } catch let error as RedisError where error.serverMessage?.hasPrefix("BUSYGROUP") == true {
            // Another instance (or an earlier run) created it.
        }
    }

    /// Where a new group starts: `"0"`, or with predecessors (``EventStreamConsumer/Options/isPredecessor``)
    /// just before the oldest entry the furthest behind of them has not acknowledged.
    private func startOfNewGroup() async throws -> String {
        guard let isPredecessor = options.isPredecessor else { return "0" }
        var start: StreamID?
        for group in try await groups() where isPredecessor(group.name) {
            var position = group.lastDelivered
            if group.pending > 0 {
                let summary = try await redis.send(["XPENDING", RedisArgument(key), RedisArgument(group.name)])
                if let oldest = summary.array?[1].string.flatMap(StreamID.init) { position = oldest.previous }
            }
            if let position, start.map({ position < $0 }) ?? true { start = position }
        }
        return start?.description ?? "0"
    }

    /// The stream's consumer groups (`XINFO GROUPS`); none when the stream does not exist yet.
    private func groups() async throws -> [(name: String, pending: Int, lastDelivered: StreamID?)] {
        let reply: RESPValue
        do {
            reply = try await redis.send(["XINFO", "GROUPS", RedisArgument(key)])
        } catch let error as RedisError where error.serverMessage?.hasPrefix("ERR no such key") == true {
            return []
        }
        return (reply.array ?? []).compactMap { group in
            guard let fields = group.fields, let name = fields["name"]?.string else { return nil }
            return (name, fields["pending"]?.int ?? 0, fields["last-delivered-id"]?.string.flatMap(StreamID.init))
        }
    }

    /// Destroys the predecessor groups (``EventStreamConsumer/Options/isPredecessor``) whose consumers
    /// have all been idle for `idleConsumerRetention`: no instance runs them any more. Best effort.
    func removeIdlePredecessors() async {
        guard let isPredecessor = options.isPredecessor else { return }
        do {
            for group in try await groups() where isPredecessor(group.name) {
                let consumers = try await redis.send(["XINFO", "CONSUMERS", RedisArgument(key), RedisArgument(group.name)]).array ?? []
                let active = consumers.contains { consumer in
                    (consumer.fields?["idle"]?.int ?? 0) < Int(options.idleConsumerRetention.milliseconds)
                }
                guard !active else { continue }
                _ = try await redis.send(["XGROUP", "DESTROY", RedisArgument(key), RedisArgument(group.name)])
                logger.notice("destroyed a consumer group this one took over from", metadata: ["events.predecessor": "\(group.name)"])
            }
        } catch {
            logger.debug("could not look for predecessor groups", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    func readCommand(from id: String, count: Int, block: Int? = nil) -> [RedisArgument] {
        var command: [RedisArgument] = [
            "XREADGROUP", "GROUP", RedisArgument(group), RedisArgument(consumer), "COUNT", RedisArgument(count),
        ]
        if let block { command += ["BLOCK", RedisArgument(block)] }
        return command + ["STREAMS", RedisArgument(key), RedisArgument(id)]
    }

    /// Takes over entries pending longer than `minIdle` on any consumer, scanning the group's pending
    /// list a page per call; after a full scan the next waits `claimInterval`.
    mutating func claimIdleEntries(minIdle: Duration) async throws -> [StreamEntry] {
        let reply = try await redis.send([
            "XAUTOCLAIM", RedisArgument(key), RedisArgument(group), RedisArgument(consumer),
            RedisArgument(minIdle.milliseconds), RedisArgument(claimCursor),
            "COUNT", RedisArgument(options.batchSize),
        ])
        guard let parts = reply.array, parts.count >= 2, let cursor = parts[0].string, let claimed = parts[1].array else {
            throw EventStreamFailure("an XAUTOCLAIM reply is not [cursor, entries, …]")
        }
        claimCursor = cursor
        if cursor == "0-0" { nextClaim = .now + options.claimInterval }
        let entries = try claimed.map(StreamEntry.init(parsing:))
        if !entries.isEmpty {
            logger.notice(
                "claimed events left unacknowledged by a stopped or stuck consumer",
                metadata: ["events.count": "\(entries.count)", "events.first_id": "\(entries[0].id)"])
        }
        return entries
    }

    /// A stream entry id, `<milliseconds>-<sequence>`, ordered as Redis orders them.
    struct StreamID: Comparable, CustomStringConvertible {
        var milliseconds: UInt64
        var sequence: UInt64

        init?(_ text: String) {
            let parts = text.split(separator: "-")
            guard parts.count == 2, let milliseconds = UInt64(parts[0]), let sequence = UInt64(parts[1]) else { return nil }
            (self.milliseconds, self.sequence) = (milliseconds, sequence)
        }

        private init(milliseconds: UInt64, sequence: UInt64) {
            (self.milliseconds, self.sequence) = (milliseconds, sequence)
        }

        /// The id just before this one (a group started there reads this one first).
        var previous: StreamID? {
            if sequence > 0 { return StreamID(milliseconds: milliseconds, sequence: sequence - 1) }
            return milliseconds > 0 ? StreamID(milliseconds: milliseconds - 1, sequence: .max) : nil
        }

        static func < (left: StreamID, right: StreamID) -> Bool {
            (left.milliseconds, left.sequence) < (right.milliseconds, right.sequence)
        }

        var description: String { "\(milliseconds)-\(sequence)" }
    }

    /// The key of the group's lease on the topic (``EventStreamConsumer/Options/leaseTime``).
    var leaseKey: String { "aviary:events:lease:\(group):\(topic)" }

    /// Takes the lease if it is free or renews it if this consumer holds it; false when another does.
    func renewLease(for leaseTime: Duration) async throws -> Bool {
        try await redis.evaluate(
            Self.renewLeaseScript, keys: [leaseKey],
            arguments: [RedisArgument(consumer), RedisArgument(leaseTime.milliseconds)]
        ).int == 1
    }

    /// Gives the lease up at a graceful stop, so that a standby takes over at once.
    func releaseLease() async {
        do {
            _ = try await redis.evaluate(Self.releaseLeaseScript, keys: [leaseKey], arguments: [RedisArgument(consumer)])
        } catch {
            logger.debug("could not give up the consumer lease; it expires by itself", metadata: ["error": "\(error)"])
        }
    }

    private static let renewLeaseScript = RedisScript(
        """
        local holder = redis.call('GET', KEYS[1])
        if holder and holder ~= ARGV[1] then return 0 end
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return 1
        """)

    private static let releaseLeaseScript = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """)

    /// Removes from the group the other consumers that hold no pending entries and have not tried to
    /// read for `idleConsumerRetention`: each process that ever consumed left one behind. In one
    /// script, so that none gets an entry between the look and the removal (its entries would be
    /// lost to the group: `XGROUP DELCONSUMER` drops them). A standby removed so is made again by
    /// its first read. Best effort: a failure waits for the next time.
    func removeIdleConsumers() async {
        do {
            let removed = try await redis.evaluate(
                Self.removeIdleConsumersScript, keys: [key],
                arguments: [RedisArgument(group), RedisArgument(consumer), RedisArgument(options.idleConsumerRetention.milliseconds)])
            if let count = removed.int, count > 0 {
                logger.info("removed idle consumers from the group", metadata: ["consumers.removed": "\(count)"])
            }
        } catch {
            logger.debug("could not remove idle consumers from the group", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    private static let removeIdleConsumersScript = RedisScript(
        """
        local removed = 0
        for _, fields in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
            local consumer = {}
            for i = 1, #fields, 2 do consumer[fields[i]] = fields[i + 1] end
            if consumer['name'] ~= ARGV[2] and consumer['pending'] == 0 and consumer['idle'] >= tonumber(ARGV[3]) then
                redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], consumer['name'])
                removed = removed + 1
            end
        end
        return removed
        """)

    /// How many times each entry, now pending on this consumer, has been delivered (`XPENDING`).
    func deliveryCounts(of entries: [StreamEntry]) async throws -> [String: Int] {
        let reply = try await redis.send([
            "XPENDING", RedisArgument(key), RedisArgument(group), RedisArgument(entries[0].id),
            RedisArgument(entries[entries.count - 1].id), RedisArgument(entries.count + options.batchSize),
            RedisArgument(consumer),
        ])
        guard let rows = reply.array else { throw EventStreamFailure("an XPENDING reply is not an array") }
        var counts: [String: Int] = [:]
        for row in rows {
            guard let fields = row.array, fields.count == 4, let id = fields[0].string, let count = fields[3].int else {
                throw EventStreamFailure("an XPENDING row is not [id, consumer, idle, deliveries]")
            }
            counts[id] = count
        }
        return counts
    }

    /// Copies the entries to the dead-letter stream and acknowledges them, atomically (`MULTI`).
    func deadLetter(_ rejected: [(entry: StreamEntry, deliveries: Int, reason: String)]) async throws {
        var commands: [[RedisArgument]] = [["MULTI"]]
        for item in rejected {
            var command: [RedisArgument] = [
                "XADD", RedisArgument(EventStream.deadLetterKey(topic: topic)),
                "MAXLEN", "~", RedisArgument(options.deadLetterMaxLength), "*",
            ]
            for field in item.entry.fields ?? [] {
                command += [RedisArgument(field.name), RedisArgument(field.value)]
            }
            command += [
                "original_id", RedisArgument(item.entry.id), "group", RedisArgument(group),
                "consumer", RedisArgument(consumer), "deliveries", RedisArgument(item.deliveries),
                "reason", RedisArgument(item.reason),
            ]
            commands.append(command)
        }
        commands.append(
            ["XACK", RedisArgument(key), RedisArgument(group)] + rejected.map { RedisArgument($0.entry.id) })
        commands.append(["EXEC"])
        let replies = try await redis.pipeline(commands)
        guard case .array(let results)? = replies.last, results.count == commands.count - 2 else {
            throw EventStreamFailure("the dead-letter transaction was not executed: \(String(describing: replies.last))")
        }
        for case .error(let message) in results {
            throw EventStreamFailure("Redis refused a dead-letter command: \(message)")
        }
        metrics.deadLettered.increment(by: rejected.count)
        for item in rejected {
            logger.error(
                "moved an event to the dead-letter stream",
                metadata: [
                    "events.stream_id": "\(item.entry.id)", "events.deliveries": "\(item.deliveries)",
                    "events.outbox_id": "\(item.entry.value(of: EventStream.Field.outboxID).map { String(decoding: $0, as: UTF8.self) } ?? "-")",
                    "reason": "\(item.reason)",
                ])
        }
    }
}
