import ArgumentParser
import Foundation
import Logging
import NIOCore
import Redis

/// Pipelined GETs through the pool against `redis-benchmark -P 16 -t get`, each client on the same
/// number of threads: redis-benchmark's `--threads` and our event loops (one by default, as
/// redis-benchmark's). On a 2-core machine that also runs the server, a second client thread only
/// takes CPU from it: redis-benchmark with `--threads 2` makes about a fifth fewer GETs a second.
struct RedisBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redis",
        abstract: "Pipelined GET through the pool vs redis-benchmark -P 16 -t get (target: ratio ≥ 0.8).")

    @Option(help: "The Redis server.")
    var url = "redis://127.0.0.1:6379"

    @Option(help: "Client threads: redis-benchmark's --threads, and the event loops our pool and callers run on.")
    var threads = 1

    @OptionGroup var comparison: ComparisonOptions

    func validate() throws {
        guard (1...64).contains(threads) else { throw ValidationError("--threads must be 1 to 64, not \(threads)") }
    }

    func run() async throws {
        // Before anything starts the event loops, which are made once per process.
        NIOSingletons.groupLoopCountSuggestion = threads
        let (clients, seconds, rounds) = (comparison.clients, comparison.seconds, comparison.rounds)
        let configuration = try RedisConfiguration(url: url, poolSize: clients)
        let server = configuration.socketPath.map { ["-s", $0] }
            ?? ["-h", configuration.host, "-p", "\(configuration.port)"]
        let client = RedisClient(configuration: configuration, logger: Logger(label: "bench"))
        _ = try await client.send(["SET", "key:__rand_int__", "xxx"])
        let batch: [[RedisArgument]] = Array(repeating: ["GET", "key:__rand_int__"], count: 16)
        print("redis-benchmark -P 16 -t get -c \(clients)\(threads > 1 ? " --threads \(threads)" : ""); the pool with \(clients) connections and \(clients) callers on \(threads) event loop(s), pipelines of 16")
        var ratios: [Double] = []
        for round in 1...rounds {
            // About as long a run as ours (it ran about 1.2M GETs a second).
            let output = try shell(
                "/usr/bin/redis-benchmark",
                // Without --threads it runs on its main thread, a little faster than with --threads 1.
                server + (threads > 1 ? ["--threads", "\(threads)"] : []) + ["-P", "16", "-t", "get", "-c", "\(clients)", "-n", "\(seconds * 1_200_000)", "-q", "--csv"])
            // CSV: "test","rps",... then "GET","123456.78",...
            guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("\"GET\"") }),
                let theirs = Double(line.split(separator: ",")[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
            else { throw ValidationError("could not read redis-benchmark's rate from:\n\(output)") }
            let ours = try await runLoad(workers: clients, duration: .seconds(seconds), callsPerIteration: 16, recordLatency: false) {
                _ in
                _ = try await client.pipeline(batch)
            }
            ratios.append(ours.rate / theirs)
            print(String(format: "round %d: redis-benchmark %.0f GET/s, the pool %.0f GET/s, ratio %.2f", round, theirs, ours.rate, ours.rate / theirs))
        }
        await client.shutdown()
        print(String(format: "ratio: %.2f (median of %d)   (target ≥ 0.80)", median(ratios), rounds))
    }
}
