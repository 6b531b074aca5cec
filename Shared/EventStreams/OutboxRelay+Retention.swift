import Logging
import Metrics
import Redis

extension OutboxRelay {
    /// What one topic's stream holds after it was trimmed.
    struct StreamRetention: Sendable, Equatable {
        /// Entries left in the stream.
        var length: Int
        /// The consumer group furthest behind (the oldest entry it has not acknowledged, or the
        /// oldest it has not been given); nil when no group reads the stream.
        var slowestGroup: String?
    }

    /// Trims `topic`'s stream of what every consumer group has taken and acknowledged, and says
    /// what is left. A stream no group reads yet is trimmed to `streamMaxLength` instead, keeping
    /// its newest entries for a group created later.
    func trimStream(topic: String) async throws -> StreamRetention {
        let reply = try await redis.evaluate(
            Self.trimScript, keys: [EventStream.key(topic: topic)], arguments: [RedisArgument(options.streamMaxLength)])
        guard let fields = reply.array, fields.count == 2, let length = fields[0].int else {
            throw EventStreamFailure("the stream trimming script answered \(reply)")
        }
        return StreamRetention(length: length, slowestGroup: fields[1].string)
    }

    /// Trims every topic this relay has sent to, records each stream's length on its gauge, and updates
    /// `heldBack` (the topics whose streams are full, with the group each waits for), logging each
    /// change. Redis failing leaves `heldBack` as it was: the relay itself finds out soon enough.
    func applyRetention(streams: [String: Gauge], heldBack: inout [String: String]) async {
        for (topic, length) in streams.sorted(by: { $0.key < $1.key }) {
            let retention: StreamRetention
            do {
                retention = try await trimStream(topic: topic)
            } catch {
                logger.debug(
                    "trimming an event stream failed", metadata: ["topic": "\(topic)", "error": "\(String(reflecting: error))"])
                return
            }
            length.record(retention.length)
            // Worked out afresh each pass: a stream full but without groups (the slow one destroyed)
            // holds nothing back, whatever the pass before said.
            let waitsFor = retention.length >= options.streamMaxLength ? retention.slowestGroup : nil
            let before = heldBack[topic]
            heldBack[topic] = waitsFor
            if let group = waitsFor, before == nil {
                logger.warning(
                    "an event stream is full of events a consumer group has not acknowledged; the relay leaves further events in the outbox until the group catches up (or is removed with XGROUP DESTROY)",
                    metadata: [
                        "topic": "\(topic)", "group": "\(group)", "stream_length": "\(retention.length)",
                        "limit": "\(options.streamMaxLength)",
                    ])
            } else if waitsFor == nil, let group = before {
                logger.notice(
                    "the consumer group caught up; relaying events again",
                    metadata: ["topic": "\(topic)", "group": "\(group)", "stream_length": "\(retention.length)"])
            }
        }
    }

    /// KEYS[1]: the stream; ARGV[1]: the length a stream without groups is trimmed to. Answers the
    /// length left and the name of the group furthest behind (nil without groups). A group's
    /// position is its oldest pending entry (delivered, not acknowledged), or when it has none its
    /// last-delivered id: everything before the oldest position goes (`MINID ~` trims whole
    /// nodes only, so a few more entries may stay).
    static let trimScript = RedisScript(
        """
        local key = KEYS[1]
        if redis.call('EXISTS', key) == 0 then return {0, false} end
        local groups = redis.call('XINFO', 'GROUPS', key)
        if #groups == 0 then
            redis.call('XTRIM', key, 'MAXLEN', '~', ARGV[1])
            return {redis.call('XLEN', key), false}
        end
        local floor, floorMs, floorSeq, slowest
        for _, group in ipairs(groups) do
            local fields = {}
            for i = 1, #group, 2 do fields[group[i]] = group[i + 1] end
            local id = fields['last-delivered-id']
            if fields['pending'] > 0 then id = redis.call('XPENDING', key, fields['name'])[2] end
            local ms, seq = string.match(id, '^(%d+)-(%d+)$')
            ms, seq = tonumber(ms), tonumber(seq)
            if floor == nil or ms < floorMs or (ms == floorMs and seq < floorSeq) then
                floor, floorMs, floorSeq, slowest = id, ms, seq, fields['name']
            end
        end
        redis.call('XTRIM', key, 'MINID', '~', floor)
        return {redis.call('XLEN', key), slowest}
        """)
}
