import EventStreams
import Locking
import Logging
import Postgres
import Redis
import Synchronization

/// Reads that tolerate a little lag (follower pages, message history, a user's tweets, searches,
/// profiles) sent to streaming replicas (`AVIARY_POSTGRES_REPLICA_URLS`), while nobody reads a page
/// older than what they were shown.
///
/// A read names the thing it reads (`followers:<user>`, `conversation:<id>`, `tweets-by:<user>`,
/// `profile:<user>`; a search names the searcher's own writes), and a write to that
/// thing marks it for `window` (``recordWrite(to:)``: in this process, and in Redis for the other
/// instances): reads of a marked thing go to the primary. So the writer reads its own write, and
/// so does whoever was told of it (a follow's notification, a message pushed live) and opens the
/// page at once. Replicas are read in turn; a replica is left out while its replay is `window` or
/// more behind the primary (checked every quarter of a second: the replica's replay position
/// against the primary's positions a moment ago), or when it does not answer. Without replicas
/// every read goes to the primary and nothing is marked.
public final class ReplicaReads: Sendable {
    /// One replica's client and whether it is recent enough to read from.
    private final class Replica: Sendable {
        let client: PostgresClient
        let usable = Atomic<Bool>(false)

        init(client: PostgresClient) {
            self.client = client
        }
    }

    /// How often the replicas' lag is measured.
    public static let checkInterval = Duration.milliseconds(250)

    private let primary: PostgresClient
    private let replicas: [Replica]
    private let window: Duration
    private let marks: WriteMarks
    private let logger: Logger
    private let turn = Atomic<Int>(0)
    /// Set by the first read that could go to a replica: a service that reads none checks none.
    private let asked = Atomic<Bool>(false)
    /// The primary's WAL positions of the last checks, newest last: a replica that replayed up to
    /// one of them is at most that old.
    private let primaryPositions = Locked<[(at: ContinuousClock.Instant, lsn: UInt64)]>([])

    /// - Parameters:
    ///   - service: names the marks in Redis (`aviary:replica-marks:<service>:<thing>`).
    public init(
        primary: PostgresClient, replicas: [PostgresClient], redis: RedisClient, window: Duration, service: String, logger: Logger
    ) {
        self.primary = primary
        self.replicas = replicas.map(Replica.init)
        self.window = window
        marks = WriteMarks(redis: redis, prefix: "aviary:replica-marks:\(service):", window: window, logger: logger)
        self.logger = logger
    }

    /// Whether there are replicas to read from.
    public var hasReplicas: Bool { !replicas.isEmpty }

    /// The client to read `thing` with: a usable replica in turn, or the primary while `thing` is
    /// marked (or when no replica is usable, or the mark cannot be looked up). A nil `thing` is a
    /// read nobody's write marks (an anonymous search): a usable replica.
    public func client(reading thing: String?) async -> PostgresClient {
        if !asked.load(ordering: .relaxed) { asked.store(true, ordering: .relaxed) }
        let usable = replicas.filter { $0.usable.load(ordering: .relaxed) }
        guard !usable.isEmpty else { return primary }
        guard let thing else { return usable[turn.wrappingAdd(1, ordering: .relaxed).oldValue % usable.count].client }
        if await marks.isMarked(thing) { return primary }
        return usable[turn.wrappingAdd(1, ordering: .relaxed).oldValue % usable.count].client
    }

    /// Marks `things` as just written: their reads go to the primary for `window`. Call after the
    /// write committed, before answering.
    public func recordWrite(to things: [String]) async {
        guard hasReplicas else { return }
        await marks.mark(things)
    }

    /// Measures each replica's lag once (``checkInterval``, a background job): reads the primary's
    /// WAL position, then each replica's replay position, and keeps a replica usable while it has
    /// replayed what the primary had written `window` ago. Nothing until a read could use a replica.
    public func checkReplicas() async {
        guard asked.load(ordering: .relaxed) else { return }
        let now = ContinuousClock.now
        do {
            let lsn = try Self.lsn(try await primary.query("SELECT pg_current_wal_lsn()::text")[0].decode(String.self, at: 0))
            primaryPositions.withLock { positions in
                positions.append((now, lsn))
                positions.removeAll { now - $0.at > window * 2 }
            }
        } catch {
            logger.debug("could not read the primary's WAL position", metadata: ["error": "\(String(reflecting: error))"])
        }
        let positions = primaryPositions.withLock { $0 }
        for replica in replicas {
            var usable = false
            do {
                let text = try await replica.client.query("SELECT coalesce(pg_last_wal_replay_lsn(), '0/0')::text")[0].decode(String.self, at: 0)
                let replayed = try Self.lsn(text)
                // The newest primary position it has replayed; usable when that is less than `window` old.
                if let reached = positions.last(where: { $0.lsn <= replayed }) {
                    usable = now - reached.at < window
                }
            } catch {
                logger.debug("a replica did not answer its lag check", metadata: ["error": "\(String(reflecting: error))"])
            }
            if replica.usable.exchange(usable, ordering: .relaxed) != usable {
                logger.notice(usable ? "a replica is caught up: reading from it" : "a replica is behind or unreachable; reading from the primary")
            }
        }
    }

    /// A WAL position, `X/Y` in hex, as a number.
    static func lsn(_ text: String) throws -> UInt64 {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let high = UInt64(parts[0], radix: 16), let low = UInt64(parts[1], radix: 16) else {
            throw ReplicaPositionError(text: text)
        }
        return high << 32 | low
    }

    func shutdown() async {
        for replica in replicas { await replica.client.shutdown() }
    }
}

/// A WAL position Postgres gave that is not `X/Y` in hex.
struct ReplicaPositionError: Error {
    var text: String
}
