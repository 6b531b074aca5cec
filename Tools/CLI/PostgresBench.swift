import ArgumentParser
import Foundation
import Logging
import NIOCore
import Postgres

/// Primary-key selects through the pool against `pgbench -S` with the same client count.
struct PostgresBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postgres",
        abstract: "Primary-key select through the pool vs pgbench -S (target: ratio ≥ 0.8). Creates pgbench tables in the database.",
        discussion: """
            With --prepared off the pool sends its statements unnamed, as AVIARY_POSTGRES_PREPARED=off does for a \
            pooler in transaction mode, and pgbench runs -M extended (unnamed too): point --url at PgBouncer to \
            measure what the pooler costs, or at the server to measure what unnamed statements cost.
            """)

    @Option(help: "A libpq URL of a database the benchmark may fill with pgbench tables.")
    var url = "postgres://aviary@127.0.0.1:5432/aviary"

    @OptionGroup var comparison: ComparisonOptions

    @Option(help: "on (named prepared statements, pgbench -M prepared) or off (unnamed, pgbench -M extended).")
    var prepared = Prepared.on

    enum Prepared: String, ExpressibleByArgument {
        case on, off
    }

    @Option(help: "Event loops the callers run on (default: as the local stack runs each service, a quarter of the cores, at least 1).")
    var eventLoops = max(1, System.coreCount / 4)

    func validate() throws {
        guard (1...256).contains(eventLoops) else { throw ValidationError("--event-loops must be 1 to 256, not \(eventLoops)") }
    }

    func run() async throws {
        // Before anything starts the event loops, which are made once per process.
        NIOSingletons.groupLoopCountSuggestion = eventLoops
        let (clients, seconds, rounds) = (comparison.clients, comparison.seconds, comparison.rounds)
        let pgbench = ["/usr/bin/pgbench"] + ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .sorted().reversed().map { "/usr/lib/postgresql/\($0)/bin/pgbench" }
        guard let tool = pgbench.first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw ValidationError("pgbench not found; install postgresql-contrib or postgresql-client")
        }
        try shell(tool, ["-i", "-s", "1", "-q", url])
        func pool(readerThreads: Int) throws -> PostgresClient {
            var options = PostgresConfiguration.Options()
            options.poolSize = clients
            options.readerThreads = readerThreads
            options.transactionPooling = prepared == .off
            return try PostgresClient(configuration: .init(url: url, options: options), logger: Logger(label: "bench"))
        }
        // The headline: the pool as the services configure it (one reader thread, the default; the
        // callers on the event loops, as the services' calls run). Beside it, the pool matched to
        // pgbench's two threads: a reader thread each, the callers on them or on the event loops.
        let services = try pool(readerThreads: PostgresConfiguration.Options().readerThreads)
        let matched = try pool(readerThreads: 2)
        let mode = prepared == .on ? "prepared" : "extended"
        @Sendable func select(_ client: PostgresClient) async throws {
            let rows = try await client.query(
                "SELECT abalance FROM pgbench_accounts WHERE aid = $1", [BenchRandom.pick(Int32(1)...100_000)])
            _ = try rows[0].decode(Int32.self, at: 0)
        }
        print("pgbench -S -M \(mode), \(clients) clients, 2 threads, against the pool with \(clients) connections and \(clients) callers:")
        print("  as the services run it: \(services.executors.count) reader thread, the callers on \(eventLoops) event loop(s)")
        print("  matched to pgbench's threads: 2 reader threads, the callers on them (as pgbench runs its clients on the threads that poll")
        print("  their connections) or on the event loops (each answer hops from a reader thread to the loop)")
        var ratios: (services: [Double], onReaders: [Double], onLoops: [Double]) = ([], [], [])
        // A count of transactions, not `-T`: pgbench ends a timed run with SIGALRM, which a child of
        // this process inherits blocked, so a timed run would never end.
        let transactions = seconds * 80_000 / clients
        for round in 1...rounds {
            let output = try shell(tool, ["-S", "-M", mode, "-c", "\(clients)", "-j", "2", "-t", "\(transactions)", url])
            guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
                let theirs = Double(line.dropFirst(6).prefix { $0 != " " })
            else { throw ValidationError("could not read pgbench's tps from:\n\(output)") }
            let asServices = try await runLoad(workers: clients, duration: .seconds(seconds)) { _ in try await select(services) }
            let onReaders = try await runLoad(workers: clients, duration: .seconds(seconds), executors: matched.executors) { _ in
                try await select(matched)
            }
            let onLoops = try await runLoad(workers: clients, duration: .seconds(seconds)) { _ in try await select(matched) }
            ratios.services.append(asServices.rate / theirs)
            ratios.onReaders.append(onReaders.rate / theirs)
            ratios.onLoops.append(onLoops.rate / theirs)
            print(String(format: "round %d: pgbench %.0f selects/s", round, theirs))
            print("  as the services run it:        \(asServices.summary)  ratio " + String(format: "%.2f", asServices.rate / theirs))
            print("  2 reader threads, callers on them: \(onReaders.summary)  ratio " + String(format: "%.2f", onReaders.rate / theirs))
            print("  2 reader threads, callers on the loops: \(onLoops.summary)  ratio " + String(format: "%.2f", onLoops.rate / theirs))
        }
        await services.shutdown()
        await matched.shutdown()
        print(String(format: "ratio, the pool as the services run it: %.2f (median of %d)   (target ≥ 0.80)", median(ratios.services), rounds))
        print(String(format: "ratio, 2 reader threads, callers on them: %.2f; callers on the event loops: %.2f", median(ratios.onReaders), median(ratios.onLoops)))
    }
}

/// Runs a tool and returns its standard output; a failure throws with its output.
@discardableResult
func shell(_ tool: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let output = String(decoding: data, as: UTF8.self)
    guard process.terminationStatus == 0 else {
        throw ValidationError("\(tool) failed:\n\(output)")
    }
    return output
}
