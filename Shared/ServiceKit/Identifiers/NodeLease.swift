#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ChannelSupport
import EventStreams
import Logging
import Postgres
import RPC
import ServiceLifecycle

/// The node id of a process configured without one (`AVIARY_NODE_ID` unset), leased from Postgres
/// (`aviary_shared.node_leases`), so that processes issuing ids at the same time never share one,
/// however many replicas a single template starts.
///
/// A lease lasts `lifetime` on the database's clock and is renewed every fifth of it (``run()``).
/// The process counts its lease valid until four fifths of `lifetime` after it sent the last
/// renewal that succeeded, by its own monotonic clock: always before the database lets another
/// process take the id. When that moment passes without a renewal (Postgres unreachable that
/// long), or a renewal finds the lease taken, ``run()`` throws and the service stops rather than
/// issue ids another process may issue too. A process that stops keeps its id `quarantine` longer,
/// so that the ids of two hosts whose clocks differ by less than that never meet.
public struct NodeLease: Service {
    public let nodeID: Int
    let holder: String
    let postgres: PostgresClient
    let lifetime: Duration
    let quarantine: Duration
    let logger: Logger
    /// Until when the process may issue ids with `nodeID` without a renewal.
    let validUntil: ContinuousClock.Instant

    /// The default lifetime: a Postgres outage of four minutes stops the services; a crashed
    /// process's id is free again after five.
    public static let defaultLifetime = Duration.seconds(300)
    public static let defaultQuarantine = Duration.seconds(10)
    /// How many free ids one attempt of ``acquire`` tries to claim, in random order.
    static let candidatesPerRound = 16

    /// Leases a node id that no live lease holds, for `holder` (a name for people reading the table).
    /// Throws ``NodeLeaseError/exhausted`` when every id is leased.
    public static func acquire(
        postgres: PostgresClient, holder: String, lifetime: Duration = defaultLifetime,
        quarantine: Duration = defaultQuarantine, logger: Logger
    ) async throws -> NodeLease {
        while true {
            let free = try await postgres.query(
                """
                SELECT n FROM generate_series(0, \(SnowflakeGenerator.maxNodeID)) AS n
                WHERE NOT EXISTS (SELECT 1 FROM aviary_shared.node_leases l WHERE l.node_id = n AND l.expires_at > now())
                ORDER BY random() LIMIT $1
                """, [candidatesPerRound])
            guard !free.isEmpty else { throw NodeLeaseError.exhausted }
            for row in free {
                let candidate = try row.decode(Int.self, at: 0)
                let sent = ContinuousClock.now
                // Claims the id unless a live lease holds it: another process may have claimed it since the list.
                let claimed = try await postgres.execute(
                    """
                    INSERT INTO aviary_shared.node_leases AS l (node_id, holder, expires_at)
                    VALUES ($1, $2, now() + $3::bigint * interval '1 millisecond')
                    ON CONFLICT (node_id) DO UPDATE
                        SET holder = excluded.holder, acquired_at = now(), expires_at = excluded.expires_at
                        WHERE l.expires_at <= now()
                    """, [candidate, holder, milliseconds(lifetime)])
                if claimed == 1 {
                    let lease = NodeLease(
                        nodeID: candidate, holder: holder, postgres: postgres, lifetime: lifetime, quarantine: quarantine,
                        logger: logger, validUntil: validUntil(renewalSentAt: sent, lifetime: lifetime))
                    logger.info("leased node id \(candidate) for time-ordered ids", metadata: ["holder": "\(holder)"])
                    return lease
                }
            }
        }
    }

    /// A holder name that tells people which process holds a lease: service, host, pid and a random tag.
    public static func holderName(service: String) -> String {
        let tag = UInt32.random(in: 0...UInt32.max)
        return "\(service)@\(hostName()) pid \(getpid()) \(String(tag, radix: 16))"
    }

    /// `gethostname(2)`, which unlike `ProcessInfo.hostName` never waits for DNS.
    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Renews the lease every fifth of its lifetime until the service group stops, then releases it
    /// (into quarantine). Throws ``NodeLeaseError/lost`` when the lease lapsed or was taken.
    public func run() async throws {
        let interval = lifetime / 5
        var validUntil = self.validUntil
        var due = ContinuousClock.now + interval
        var failures = RetryBackoff(initial: .seconds(1), maximum: interval)
        while !serviceIsStopping {
            await pauseUnlessStopping(for: due - .now)
            if serviceIsStopping { break }
            let sent = ContinuousClock.now
            do {
                // A renewal still waiting at `validUntil` (for a pooled connection, a lock, a dead
                // TCP connection) is given up on: from then on only the service's stop is safe.
                guard let renewed = try await value(of: { try await extend(by: lifetime) }, before: validUntil) else {
                    throw NodeLeaseError.lost("could not renew the lease of node id \(nodeID) in time: the renewal did not answer")
                }
                guard renewed else {
                    throw NodeLeaseError.lost("node id \(nodeID) is no longer leased to this process")
                }
                validUntil = Self.validUntil(renewalSentAt: sent, lifetime: lifetime)
                failures.reset()
                due = .now + interval
            } catch let error as NodeLeaseError {
                throw error
            } catch {
                guard ContinuousClock.now < validUntil else {
                    throw NodeLeaseError.lost("could not renew the lease of node id \(nodeID) in time: \(error)")
                }
                logger.warning(
                    "renewing the node id lease failed; retrying", metadata: ["node.id": "\(nodeID)", "error": "\(error)"])
                due = min(.now + failures.next(), validUntil)
            }
        }
        await release()
    }

    /// Gives the id back: it stays reserved for the quarantine, then any process may lease it.
    public func release() async {
        do {
            _ = try await extend(by: quarantine)
        } catch {
            logger.warning(
                "could not release the node id lease; it expires on its own",
                metadata: ["node.id": "\(nodeID)", "error": "\(error)"])
        }
    }

    /// Four fifths of `lifetime` after a claim or renewal that succeeded was sent: before the database,
    /// which counts the whole lifetime from when it ran the statement, lets anyone else take the id.
    private static func validUntil(renewalSentAt sent: ContinuousClock.Instant, lifetime: Duration) -> ContinuousClock.Instant {
        sent + lifetime * 4 / 5
    }

    /// Sets the lease to end `duration` from now on the database's clock; false when this process
    /// no longer holds it.
    func extend(by duration: Duration) async throws -> Bool {
        try await postgres.execute(
            """
            UPDATE aviary_shared.node_leases SET expires_at = now() + $3::bigint * interval '1 millisecond'
            WHERE node_id = $1 AND holder = $2
            """, [nodeID, holder, Self.milliseconds(duration)]) == 1
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        Int64(duration / .milliseconds(1))
    }
}

public enum NodeLeaseError: Error, CustomStringConvertible {
    /// Every node id (0…1023) is leased by a live process.
    case exhausted
    /// The lease lapsed or another process took the id: this process must stop issuing ids.
    case lost(String)

    public var description: String {
        switch self {
        case .exhausted:
            "every node id (0...\(SnowflakeGenerator.maxNodeID)) is leased; set AVIARY_NODE_ID, or stop processes that hold one"
        case .lost(let reason):
            "\(reason); stopping, so that no id is issued twice"
        }
    }
}
