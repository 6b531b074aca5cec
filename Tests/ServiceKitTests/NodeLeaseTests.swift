import Logging
import Postgres
import ServiceLifecycle
import TestSupport
import Testing

@testable import ServiceKit

@Suite("Node id leases", .timeLimit(.minutes(2)))
struct NodeLeaseTests {
    static let logger: Logger = {
        var logger = Logger(label: "test.node-lease")
        logger.logLevel = .warning
        return logger
    }()

    /// A fresh database with the shared tables, and a client of it.
    static func database() async throws -> PostgresClient {
        let url = try await TestServers.postgres().makeDatabase()
        let postgres = try PostgresClient(configuration: PostgresConfiguration(url: url), logger: logger)
        _ = try await SharedSchema.migrator.migrate(postgres)
        return postgres
    }

    /// In a fresh database, a lease of `holder`'s, and every other node id leased by someone else for an hour.
    static func leaseTheOnlyFreeID(
        holder: String, lifetime: Duration = NodeLease.defaultLifetime, quarantine: Duration = NodeLease.defaultQuarantine
    ) async throws -> (PostgresClient, NodeLease) {
        let postgres = try await database()
        let lease = try await NodeLease.acquire(
            postgres: postgres, holder: holder, lifetime: lifetime, quarantine: quarantine, logger: logger)
        _ = try await postgres.execute(
            """
            INSERT INTO aviary_shared.node_leases (node_id, holder, expires_at)
            SELECT n, 'another process', now() + interval '1 hour' FROM generate_series(0, 1023) AS n WHERE n <> $1
            """, [lease.nodeID])
        return (postgres, lease)
    }

    @Test func processesStartingTogetherLeaseDistinctIDs() async throws {
        let postgres = try await Self.database()
        defer { Task { await postgres.shutdown() } }
        let ids = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<40 {
                group.addTask {
                    try await NodeLease.acquire(postgres: postgres, holder: "process \(index)", logger: Self.logger).nodeID
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(ids.count == 40)
        #expect(Set(ids).count == 40, "two processes leased the same node id: \(ids.sorted())")
        #expect(ids.allSatisfy { (0...SnowflakeGenerator.maxNodeID).contains($0) })
        let rows = try await postgres.query("SELECT count(DISTINCT holder) FROM aviary_shared.node_leases WHERE expires_at > now()")
        #expect(try rows[0].decode(Int.self, at: 0) == 40)
    }

    @Test func aLiveLeaseIsKeptAndAnExpiredOneIsTakenOver() async throws {
        let (postgres, first) = try await Self.leaseTheOnlyFreeID(holder: "first", lifetime: .seconds(1))
        defer { Task { await postgres.shutdown() } }

        // Every id is leased while the first lease lives: a second process is refused, naming the way out.
        await #expect {
            _ = try await NodeLease.acquire(postgres: postgres, holder: "second", logger: Self.logger)
        } throws: { error in
            (error as? NodeLeaseError).map { "\($0)".contains("set AVIARY_NODE_ID") } ?? false
        }
        #expect(try await first.extend(by: .seconds(1)), "the holder renews its live lease")

        try await Task.sleep(for: .milliseconds(1200))
        let second = try await NodeLease.acquire(postgres: postgres, holder: "second", logger: Self.logger)
        #expect(second.nodeID == first.nodeID, "the expired lease's id is the only free one")
        #expect(try await first.extend(by: .seconds(1)) == false, "the first process learns it lost its id")
        #expect(try await second.extend(by: .seconds(1)))
    }

    @Test func aStoppedProcessKeepsItsIDForTheQuarantine() async throws {
        let (postgres, lease) = try await Self.leaseTheOnlyFreeID(holder: "stopping", quarantine: .seconds(1))
        defer { Task { await postgres.shutdown() } }

        // Run it in a service group and stop that gracefully: the lease is released into quarantine.
        let group = ServiceGroup(services: [lease], logger: Self.logger)
        async let running: Void = group.run()
        try await Task.sleep(for: .milliseconds(100))
        await group.triggerGracefulShutdown()
        try await running
        let left = try await postgres.query(
            "SELECT extract(epoch FROM expires_at - now()) FROM aviary_shared.node_leases WHERE node_id = $1", [lease.nodeID])
        let seconds = try left[0].decode(Double.self, at: 0)
        #expect(seconds > 0 && seconds <= 1, "released into a 1 s quarantine, not the 5 min lifetime: \(seconds) s left")

        await #expect(throws: NodeLeaseError.self) {
            _ = try await NodeLease.acquire(postgres: postgres, holder: "next", logger: Self.logger)
        }
        try await Task.sleep(for: .milliseconds(1200))
        let next = try await NodeLease.acquire(postgres: postgres, holder: "next", logger: Self.logger)
        #expect(next.nodeID == lease.nodeID)
    }

    @Test func runStopsWhenAnotherProcessHoldsTheID() async throws {
        let postgres = try await Self.database()
        defer { Task { await postgres.shutdown() } }
        // Renewed every 200 ms.
        let lease = try await NodeLease.acquire(
            postgres: postgres, holder: "victim", lifetime: .seconds(1), logger: Self.logger)
        _ = try await postgres.execute(
            "UPDATE aviary_shared.node_leases SET holder = 'thief' WHERE node_id = $1", [lease.nodeID])
        let ended = await outcome(within: .seconds(5)) { try await lease.run() }
        let message: String
        switch ended {
        case .failure(let error): message = "\(error)"
        case .success: message = "run() returned"
        case nil: message = "run() still runs after 5 s"
        }
        #expect(message.contains("node id \(lease.nodeID) is no longer leased to this process"), "\(message)")
        #expect(message.contains("no id is issued twice"))
    }

    /// A renewal that does not answer (waiting on a lock here; a dead connection or an exhausted
    /// pool elsewhere) stops the service when the lease may lapse, not whenever the renewal returns.
    @Test func runStopsWhenARenewalHangsPastTheLeasesEnd() async throws {
        let postgres = try await Self.database()
        defer { Task { await postgres.shutdown() } }
        // Renewed every 200 ms, valid for 800 ms after the last renewal sent.
        let lease = try await NodeLease.acquire(
            postgres: postgres, holder: "stuck", lifetime: .seconds(1), logger: Self.logger)
        let message = try await holdingTransaction(
            "SELECT FROM aviary_shared.node_leases WHERE node_id = $1 FOR UPDATE", [lease.nodeID], on: postgres, commit: false
        ) {
            switch await outcome(within: .seconds(4), of: { try await lease.run() }) {
            case .failure(let error): "\(error)"
            case .success: "run() returned"
            case nil: "run() still runs after 4 s"
            }
        }
        #expect(message.contains("could not renew the lease of node id \(lease.nodeID) in time"), "\(message)")
    }
}
