import ArgumentParser
import Foundation
import NIOPosix
import RPC
import Synchronization

/// `aviary bench …`: benchmarks that print figures (never pass/fail): run them on a quiet machine.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure the shared libraries against their targets and against the servers' own tools.",
        subcommands: [RPCBench.self, PostgresBench.self, RedisBench.self, GraphBench.self, AuthBench.self, MediaBench.self, MessagingBench.self, NotificationsBench.self, TweetsBench.self, TimelineBench.self])
}

/// Throughput and latency figures of one run.
struct LoadFigures {
    var calls: Int
    var seconds: Double
    var latencies: [Duration]

    var rate: Double { Double(calls) / seconds }

    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        let sorted = latencies.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)
        let value = sorted[max(0, index)].components
        return Double(value.seconds) * 1000 + Double(value.attoseconds) / 1e15
    }

    var summary: String {
        let rateText = String(format: "%.0f calls/s", rate)
        guard !latencies.isEmpty else { return rateText }
        return rateText + String(format: "  p50 %.2f ms  p99 %.2f ms", percentile(0.50), percentile(0.99))
    }
}

/// Runs `workers` loops of `body` for `duration`; each loop iteration counts `callsPerIteration` calls.
func runLoad(
    workers: Int, duration: Duration, callsPerIteration: Int = 1, recordLatency: Bool = true,
    _ body: @escaping @Sendable (_ worker: Int) async throws -> Void
) async throws -> LoadFigures {
    let start = ContinuousClock.now
    let deadline = start.advanced(by: duration)
    let results = try await withThrowingTaskGroup(of: (Int, [Duration]).self) { group in
        for worker in 0..<workers {
            // On an event loop, as the services run their calls: no hop to Swift's global pool per call.
            let executor = EventLoopTaskExecutor(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
            group.addTask(executorPreference: executor) {
                var calls = 0
                var latencies: [Duration] = []
                while ContinuousClock.now < deadline {
                    let began = ContinuousClock.now
                    try await body(worker)
                    if recordLatency { latencies.append(ContinuousClock.now - began) }
                    calls += callsPerIteration
                }
                return (calls, latencies)
            }
        }
        var total = 0
        var latencies: [Duration] = []
        for try await (calls, workerLatencies) in group {
            total += calls
            latencies += workerLatencies
        }
        return (total, latencies)
    }
    let elapsed = (ContinuousClock.now - start).components
    return LoadFigures(
        calls: results.0, seconds: Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18, latencies: results.1)
}

/// Starts `rate` calls a second for `duration` whatever the answers' pace (an open loop, so a slow
/// answer does not hide the calls it delays); each latency runs from the moment its call was due.
func runAtRate(
    _ rate: Int, for duration: Duration, _ body: @escaping @Sendable (Int) async throws -> Void
) async throws -> LoadFigures {
    let start = ContinuousClock.now
    let total = Int(Double(rate) * (Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18))
    let interval = Duration.seconds(1) / rate
    let failures = BenchCounter()
    let latencies = try await withThrowingTaskGroup(of: Duration?.self) { group in
        var launched = 0
        var latencies: [Duration] = []
        latencies.reserveCapacity(total)
        while launched < total {
            let elapsed = (ContinuousClock.now - start).components
            let due = min(total, Int(Double(rate) * (Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)) + 1)
            while launched < due {
                let index = launched
                let scheduled = start + interval * index
                let executor = EventLoopTaskExecutor(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
                group.addTask(executorPreference: executor) {
                    do {
                        try await body(index)
                        return ContinuousClock.now - scheduled
                    } catch {
                        _ = failures.take()
                        return nil
                    }
                }
                launched += 1
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        for try await latency in group { if let latency { latencies.append(latency) } }
        return latencies
    }
    let elapsed = ContinuousClock.now - start
    if failures.count > 0 { print("  (\(failures.count) calls failed)") }
    return LoadFigures(
        calls: latencies.count, seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
        latencies: latencies)
}

/// Hands out 0, 1, 2, … to concurrent tasks.
final class BenchCounter: Sendable {
    private let next = Atomic<Int>(0)

    func take() -> Int {
        next.add(1, ordering: .relaxed).oldValue
    }

    var count: Int { next.load(ordering: .relaxed) }
}
