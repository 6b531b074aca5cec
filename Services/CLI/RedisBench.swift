import ArgumentParser
import Foundation
import Logging
import Redis

/// Pipelined GETs through the pool against `redis-benchmark -P 16 -t get`.
struct RedisBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redis",
        abstract: "Pipelined GET through the pool vs redis-benchmark -P 16 -t get (target: ratio ≥ 0.8).")

    @Option(help: "The Redis server.")
    var url = "redis://127.0.0.1:6379"

    @Option(help: "Concurrent clients (pool size for ours, -c for redis-benchmark).")
    var clients = 8

    @Option(help: "Seconds for our run.")
    var seconds = 10

    func run() async throws {
        let configuration = try RedisConfiguration(url: url, poolSize: clients)
        let server = configuration.socketPath.map { ["-s", $0] }
            ?? ["-h", configuration.host, "-p", "\(configuration.port)"]
        // About as long a run as ours, so that both see the machine alike (2M GETs took 1.5 s, and
        // their rate varied by a fifth from run to run).
        let output = try shell(
            "/usr/bin/redis-benchmark",
            server + ["-P", "16", "-t", "get", "-c", "\(clients)",
             "-n", "\(seconds * 1_200_000)", "-q", "--csv"])
        // CSV: "test","rps",... then "GET","123456.78",...
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("\"GET\"") }),
            let theirs = Double(line.split(separator: ",")[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        else { throw ValidationError("could not read redis-benchmark's rate from:\n\(output)") }

        let client = RedisClient(configuration: configuration, logger: Logger(label: "bench"))
        _ = try await client.send(["SET", "key:__rand_int__", "xxx"])
        let batch: [[RedisArgument]] = Array(repeating: ["GET", "key:__rand_int__"], count: 16)
        let ours = try await runLoad(workers: clients, duration: .seconds(seconds), callsPerIteration: 16, recordLatency: false) {
            _ in
            _ = try await client.pipeline(batch)
        }
        await client.shutdown()
        print(String(format: "redis-benchmark -P 16 -t get, %d clients: %.0f GET/s", clients, theirs))
        print("Redis pool, pipelines of 16, \(clients) clients:  \(ours.summary.replacingOccurrences(of: "calls", with: "GET"))")
        print(String(format: "ratio: %.2f   (target ≥ 0.80)", ours.rate / theirs))
    }
}
