import AviaryAPI
import AviaryJSON
import Foundation
import Locking
import Logging
import Postgres
import RPC
import Redis
import ServiceKit
import ServiceLifecycle

/// Who is online in messaging, across every instance, kept in Redis:
/// - `…:active` (sorted set): each user's last messaging call, in milliseconds;
/// - `…:subs:<userId>` (sorted set): the instances holding a subscription of the user, each with
///   an expiry the holder renews, so a crashed instance's entries lapse by themselves;
/// - `…:online` (set): who was last announced online, so each change is announced once.
///
/// A user is online while one of their subscriptions is open or within `window` of their last
/// call. A sweep (on every instance; the Lua script makes racing sweeps harmless) takes users
/// out once both have lapsed, writes `lastSeen` to Postgres and announces them offline.
final class PresenceTracker: Service, Sendable {
    private let redis: RedisClient
    private let postgres: PostgresClient
    private let hub: LiveHub
    private let events: MessagingEvents
    private let logger: Logger
    let window: Duration
    private let instance = UUID().uuidString
    /// When each user was last recorded here: calls within a second of that skip Redis.
    private let recorded = Locked<[Int64: ContinuousClock.Instant]>([:])

    /// One hash tag for every presence key: the sweep's scripts read and change them together, so
    /// on a Redis Cluster they share a slot.
    private static let prefix = "{aviary:messaging:presence}:"
    private static let activeKey = prefix + "active"
    private static let onlineKey = prefix + "online"
    private static let subscriptionsPrefix = prefix + "subs:"
    /// How long an instance's claim to hold a user's subscription lasts unless renewed.
    private static let claimLifetime: Int64 = 30_000
    private static let renewInterval = Duration.seconds(10)

    init(redis: RedisClient, postgres: PostgresClient, hub: LiveHub, events: MessagingEvents, window: Duration, logger: Logger) {
        self.redis = redis
        self.postgres = postgres
        self.hub = hub
        self.events = events
        self.window = window
        self.logger = logger
    }

    private var windowMilliseconds: Int64 { window.components.seconds * 1000 + window.components.attoseconds / 1_000_000_000_000_000 }

    // MARK: Calls

    /// Records a messaging call by `user`, in one pipelined round trip with `commands` (whose
    /// replies are not looked at).
    func record(_ user: Int64, alongside commands: [[RedisArgument]] = []) async throws {
        let now = ContinuousClock.now
        let due = recorded.withLock { recorded in
            if let last = recorded[user], last.duration(to: now) < .seconds(1) { return false }
            if recorded.count > 100_000 { recorded.removeAll(keepingCapacity: true) }
            recorded[user] = now
            return true
        }
        var commands = commands
        if due {
            let milliseconds = Date().millisecondsSince1970
            commands.append(["ZADD", RedisArgument(Self.activeKey), RedisArgument(String(milliseconds)), RedisArgument(String(user))])
            commands.append(["SADD", RedisArgument(Self.onlineKey), RedisArgument(String(user))])
        }
        guard !commands.isEmpty else { return }
        let replies = try await redis.pipeline(commands)
        if due, replies.last?.int == 1 {
            await announce(Presence(userId: EntityID(user), online: true, lastSeen: Date()))
        }
    }

    /// Which of `users` hold an open subscription somewhere, in one pipelined round trip.
    func subscribed(among users: [Int64]) async throws -> Set<Int64> {
        guard !users.isEmpty else { return [] }
        let milliseconds = RedisArgument(String(Date().millisecondsSince1970))
        let replies = try await redis.pipeline(
            users.map { ["ZCOUNT", RedisArgument(Self.subscriptionsPrefix + String($0)), milliseconds, "+inf"] })
        return Set(zip(users, replies).compactMap { user, reply in (reply.int ?? 0) > 0 ? user : nil })
    }

    /// Records that `user` holds a subscription on this instance (and is online).
    func subscriptionOpened(_ user: Int64) async throws {
        let expiry = Date().millisecondsSince1970 + Self.claimLifetime
        _ = try await redis.send([
            "ZADD", RedisArgument(Self.subscriptionsPrefix + String(user)), RedisArgument(String(expiry)), RedisArgument(instance),
        ])
        recorded.withLock { _ = $0.removeValue(forKey: user) }
        try await record(user)
    }

    /// `user`'s last subscription on this instance closed: they were last seen now.
    private func subscriptionClosed(_ user: Int64) async throws {
        let now = Date().millisecondsSince1970
        _ = try await redis.pipeline([
            ["ZREM", RedisArgument(Self.subscriptionsPrefix + String(user)), RedisArgument(instance)],
            ["ZADD", RedisArgument(Self.activeKey), RedisArgument(String(now)), RedisArgument(String(user))],
        ])
    }

    // MARK: Queries

    /// The presence of each of `users`, in that order.
    func presence(of users: [Int64]) async throws -> [Presence] {
        guard !users.isEmpty else { return [] }
        let now = Date().millisecondsSince1970
        var commands: [[RedisArgument]] = []
        for user in users {
            commands.append(["ZSCORE", RedisArgument(Self.activeKey), RedisArgument(String(user))])
            commands.append(["ZCOUNT", RedisArgument(Self.subscriptionsPrefix + String(user)), RedisArgument(String(now)), "+inf"])
        }
        let replies = try await redis.pipeline(commands)
        var answers: [Presence] = []
        var unseen: [Int64] = []
        for (index, user) in users.enumerated() {
            let lastCall = replies[index * 2].string.flatMap { Double($0) }.map { Int64($0) }
            let subscribed = (replies[index * 2 + 1].int ?? 0) > 0
            if subscribed {
                answers.append(Presence(userId: EntityID(user), online: true, lastSeen: Date()))
            } else if let lastCall {
                answers.append(
                    Presence(
                        userId: EntityID(user), online: lastCall >= now - windowMilliseconds,
                        lastSeen: Date(timeIntervalSince1970: Double(lastCall) / 1000)))
            } else {
                answers.append(Presence(userId: EntityID(user), online: false, lastSeen: nil))
                unseen.append(user)
            }
        }
        guard !unseen.isEmpty else { return answers }
        let stored = try await postgres.query(
            "SELECT user_id, last_seen FROM messaging.presence WHERE user_id = ANY($1)", [unseen])
        var lastSeen: [Int64: Date] = [:]
        for row in stored { lastSeen[try row.decode(Int64.self, at: 0)] = try row.decode(Date.self, at: 1) }
        return answers.map { answer in
            var answer = answer
            if answer.lastSeen == nil { answer.lastSeen = lastSeen[answer.userId.value] }
            return answer
        }
    }

    // MARK: Background work

    func run() async throws {
        // Upkeep has nothing to finish: it stops at once on shutdown; other instances sweep on.
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { tasks in
                tasks.addTask { await self.followLocalSubscriptions() }
                tasks.addTask { await self.every(Self.renewInterval) { try await self.renewClaims() } }
                let sweepInterval = max(.milliseconds(200), min(.seconds(2), self.window / 20))
                tasks.addTask { await self.every(sweepInterval) { try await self.sweep() } }
            }
        }
    }

    private func followLocalSubscriptions() async {
        for await change in hub.presenceChanges() where !change.online {
            do {
                try await subscriptionClosed(change.userID)
            } catch {
                logger.warning("could not record a closed subscription", metadata: ["error": "\(error)"])
            }
        }
    }

    private func every(_ interval: Duration, _ body: @Sendable () async throws -> Void) async {
        while !Task.isCancelled {
            do {
                try await body()
            } catch {
                logger.warning("presence upkeep failed; retrying", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }

    private func renewClaims() async throws {
        let users = hub.connectedUsersHere
        guard !users.isEmpty else { return }
        let expiry = RedisArgument(String(Date().millisecondsSince1970 + Self.claimLifetime))
        for batch in users.chunks(of: 1000) {
            _ = try await redis.pipeline(
                batch.map {
                    ["ZADD", RedisArgument(Self.subscriptionsPrefix + String($0)), expiry, RedisArgument(instance)]
                })
        }
    }

    /// Looks at up to 500 users whose last call is older than the window: drops their lapsed
    /// subscription claims, keeps those still subscribed active (as of now), forgets those never
    /// announced online, and returns the rest with their last call, to be taken out. It forgets no
    /// last call it returns: that is stored first (``sweep()``).
    private static let leavingScript = RedisScript(
        """
        local now = tonumber(ARGV[1])
        local stale = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]), 'WITHSCORES', 'LIMIT', 0, 500)
        local leaving = {}
        for i = 1, #stale, 2 do
            local user = stale[i]
            local subscriptions = ARGV[3] .. user
            redis.call('ZREMRANGEBYSCORE', subscriptions, '-inf', now)
            if redis.call('EXISTS', subscriptions) == 1 then
                redis.call('ZADD', KEYS[1], now, user)
            elseif redis.call('SISMEMBER', KEYS[2], user) == 0 then
                redis.call('ZREM', KEYS[1], user)
            else
                table.insert(leaving, user)
                table.insert(leaving, stale[i + 1])
            end
        end
        return leaving
        """)

    /// Takes out the users listed (ARGV[4…]) who are still leaving: no call since the window and no
    /// subscription. Returns those taken out, each with their last call.
    private static let takeOutScript = RedisScript(
        """
        local now = tonumber(ARGV[1])
        local gone = {}
        for i = 4, #ARGV do
            local user = ARGV[i]
            local lastCall = redis.call('ZSCORE', KEYS[1], user)
            if lastCall and tonumber(lastCall) <= now - tonumber(ARGV[2])
                and redis.call('ZCOUNT', ARGV[3] .. user, now, '+inf') == 0 then
                redis.call('ZREM', KEYS[1], user)
                if redis.call('SREM', KEYS[2], user) == 1 then
                    table.insert(gone, user)
                    table.insert(gone, lastCall)
                end
            end
        end
        return gone
        """)

    /// Takes out the users whose subscriptions and calls have all lapsed, stores when they were last
    /// seen and announces them offline. Their `lastSeen` is stored first: a sweep stopped before
    /// it could (a crash, Postgres unreachable) leaves them for the next sweep, instead of having
    /// forgotten their last call already.
    private func sweep() async throws {
        let keys = [Self.activeKey, Self.onlineKey]
        let arguments = [
            RedisArgument(Date().millisecondsSince1970), RedisArgument(windowMilliseconds), RedisArgument(Self.subscriptionsPrefix),
        ]
        let leaving = Self.lastCalls(in: try await redis.evaluate(Self.leavingScript, keys: keys, arguments: arguments))
        guard !leaving.isEmpty else { return }
        try await storeLastSeen(leaving)
        let gone = Self.lastCalls(
            in: try await redis.evaluate(
                Self.takeOutScript, keys: keys, arguments: arguments + leaving.map { RedisArgument($0.user) }))
        recorded.withLock { recorded in for (user, _) in gone { recorded.removeValue(forKey: user) } }
        for (user, milliseconds) in gone {
            await announce(
                Presence(userId: EntityID(user), online: false, lastSeen: Date(timeIntervalSince1970: Double(milliseconds) / 1000)))
        }
    }

    /// The users and last calls (ms) of a sweep script's answer: user, score, user, score, ….
    private static func lastCalls(in reply: RESPValue) -> [(user: Int64, milliseconds: Int64)] {
        let values = reply.array ?? []
        return stride(from: 0, to: values.count - 1, by: 2).compactMap { index in
            guard let user = values[index].string.flatMap({ Int64($0) }),
                let milliseconds = values[index + 1].string.flatMap({ Double($0) })
            else { return nil }
            return (user, Int64(milliseconds))
        }
    }

    private func storeLastSeen(_ lastCalls: [(user: Int64, milliseconds: Int64)]) async throws {
        guard !lastCalls.isEmpty else { return }
        try await postgres.execute(
            """
            INSERT INTO messaging.presence AS p (user_id, last_seen)
            SELECT user_id, TIMESTAMPTZ 'epoch' + seen * INTERVAL '1 millisecond'
            FROM unnest($1::bigint[], $2::bigint[]) AS gone (user_id, seen)
            ON CONFLICT (user_id) DO UPDATE SET last_seen = greatest(p.last_seen, EXCLUDED.last_seen)
            """, [lastCalls.map(\.user), lastCalls.map(\.milliseconds)])
    }

    /// Tells everyone who shares a conversation with the user (and the user's own subscriptions).
    private func announce(_ presence: Presence) async {
        do {
            try await events.presence(presence)
        } catch {
            logger.warning("could not announce a presence change", metadata: ["error": "\(error)"])
        }
    }
}
