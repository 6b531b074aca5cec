import ArgumentParser
import Foundation
import Locking
import NIOCore
import NIOHTTP1
import NIOPosix
import RPC
import ServiceKit
import Synchronization

/// `aviary bench …`: benchmarks that print figures (never pass/fail): run them on a quiet machine.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure the shared libraries against their targets and against the servers' own tools.",
        subcommands: [RPCBench.self, PostgresBench.self, RedisBench.self, GraphBench.self, AuthBench.self, MediaBench.self, MessagingBench.self, NotificationsBench.self, TweetsBench.self, TimelineBench.self, MemoryBench.self, GatewayBench.self, FaultBench.self, BlocksBench.self, JSONBench.self])
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

/// An answer that is not the one expected: counted as a failed call.
struct BenchBadReply: Error, CustomStringConvertible {
    var text: String
    var description: String { "unexpected answer: \(text)" }
}

/// A paced run's figures as a reader takes them: every call that failed or was not answered
/// right counts as an error and, in the percentiles, as an answer after ``BenchSocket/callTimeout``.
struct BenchOutcome {
    var answered: [Duration]
    var failed: Int
    var cpuSeconds: Double

    init(figures: LoadFigures, expected: Int, cpuSeconds: Double) {
        answered = figures.latencies
        failed = max(0, expected - figures.latencies.count)
        self.cpuSeconds = cpuSeconds
    }

    private var all: LoadFigures {
        LoadFigures(calls: answered.count + failed, seconds: 1, latencies: answered + Array(repeating: BenchSocket.callTimeout, count: failed))
    }

    var p50: Double { all.percentile(0.50) }
    var p99: Double { all.percentile(0.99) }
    var maximum: Double { all.percentile(1.0) }
    var errorRate: Double { Double(failed) / Double(max(1, answered.count + failed)) }
    var cpuPerCall: Double { cpuSeconds / Double(max(1, answered.count + failed)) }

    /// The percentiles and the errors, and the CPU per call when it was measured.
    var summary: String {
        String(format: "p50 %.2f ms  p99 %.2f ms  max %.2f ms  errors %d (%.2f%%)", p50, p99, maximum, failed, errorRate * 100)
            + (cpuSeconds > 0 ? String(format: "  CPU %.0f µs per call (all aviary-* processes)", cpuPerCall * 1e6) : "")
    }
}

/// The load generators' random numbers: SplitMix64 over one shared counter. The system generator
/// makes a system call for every number (`getrandom`), CPU taken from the services on the machine
/// they share; pgbench and redis-benchmark draw theirs in user space too. Not for secrets.
struct BenchRandom: RandomNumberGenerator {
    private static let counter = Atomic<UInt64>(UInt64.random(in: .min ... .max))

    mutating func next() -> UInt64 {
        var z = Self.counter.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number of `range`.
    static func pick<T: FixedWidthInteger>(_ range: Range<T>) -> T {
        var generator = BenchRandom()
        return T.random(in: range, using: &generator)
    }

    static func pick<T: FixedWidthInteger>(_ range: ClosedRange<T>) -> T {
        var generator = BenchRandom()
        return T.random(in: range, using: &generator)
    }
}

/// How `bench postgres` and `bench redis` set our client against the server's own tool: rounds of
/// short runs side by side, each figure the median of the rounds' ratios.
struct ComparisonOptions: ParsableArguments {
    @Option(help: "Concurrent clients (the pool's size and callers for ours, -c for the server's tool).")
    var clients = 8

    @Option(help: "Seconds per run.")
    var seconds = 3

    @Option(help: "Rounds of runs side by side; the ratios reported are the medians. The machine's speed drifts, so runs taken side by side compare better than one long run each.")
    var rounds = 5

    func validate() throws {
        guard clients >= 1, seconds >= 1, rounds >= 1 else {
            throw ValidationError("--clients, --seconds and --rounds must be at least 1")
        }
    }
}

/// The middle one of `values` (the upper middle of an even count): the figure of a benchmark's rounds
/// that one slow or fast moment of the machine does not move.
func median(_ values: [Double]) -> Double {
    values.sorted()[values.count / 2]
}

/// Runs `workers` loops of `body` for `duration`; each loop iteration counts `callsPerIteration` calls.
/// Worker `i` runs on `executors[i % executors.count]`, or on an event loop when none is given.
func runLoad(
    workers: Int, duration: Duration, callsPerIteration: Int = 1, recordLatency: Bool = true,
    executors: [any TaskExecutor] = [], _ body: @escaping @Sendable (_ worker: Int) async throws -> Void
) async throws -> LoadFigures {
    let start = ContinuousClock.now
    let deadline = start.advanced(by: duration)
    let results = try await withThrowingTaskGroup(of: (Int, [Duration]).self) { group in
        for worker in 0..<workers {
            group.addTask(executorPreference: executors.isEmpty ? loadWorkerExecutor() : executors[worker % executors.count]) {
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

/// Where a load generator's worker runs: on one of the event loops, taken in turn, as the services
/// run their calls. A task on Swift's global pool would hop from the loop that read each answer to
/// a pool thread and back at every call, CPU taken from the services on the machine they share.
func loadWorkerExecutor() -> EventLoopTaskExecutor {
    EventLoopTaskExecutor(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
}

/// The rates ``runAtRate`` paces, in calls a second.
let callRates = 1...1_000_000

/// Refuses a rate ``runAtRate`` cannot pace, naming the option that set it.
func validateRate(_ rate: Int, option: String) throws {
    guard callRates.contains(rate) else {
        throw ValidationError("\(option) must be 1 to 1,000,000 calls a second, not \(rate)")
    }
}

/// Starts `rate` calls a second for `duration` whatever the answers' pace (an open loop, so a slow
/// answer does not hide the calls it delays); each latency runs from the moment its call was due.
///
/// The calls start in ticks of a millisecond (or of one call's interval, below 1,000/s), as wrk2's
/// (DeathStarBench's load generator) do, taken by the event loops in turn: each tick's loop starts
/// every call that fell due since the tick before and runs them there. So starting calls wakes one
/// thread per tick, not one per call, nor three (a sleeping task on Swift's global pool, woken by
/// Dispatch's timer thread, handing the call to a loop): on a 2-core machine shared with the
/// services, the load generator's own wake-ups would otherwise be part of what it measures. A call
/// waits less than a millisecond to start (none at 1,000/s and below, where every call falls due on
/// a tick, with `.uniform` arrivals), and that wait counts in its latency.
func runAtRate(
    _ rate: Int, for duration: Duration, arrivals: Arrivals = .uniform, _ body: @escaping @Sendable (Int) async throws -> Void
) async throws -> LoadFigures {
    precondition(callRates.contains(rate), "rates are checked with validateRate")
    let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
    let total = Int(Double(rate) * (Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18))
    let interval = Int64(1_000_000_000 / rate)
    // Nanoseconds after the start at which each call falls due, ascending; the first at the start.
    let dueTimes: [Int64]
    switch arrivals {
    case .uniform:
        dueTimes = (0..<total).map { Int64($0) * interval }
    case .poisson:
        var random = BenchRandom()
        var time = 0.0
        dueTimes = (0..<total).map { _ in
            defer { time -= log(1 - Double.random(in: 0..<1, using: &random)) * Double(interval) }
            return Int64(time)
        }
    }
    let tick = arrivals == .uniform ? max(interval, 1_000_000) : 1_000_000
    let ticks = total == 0 ? 0 : Int((dueTimes[total - 1] + tick - 1) / tick) + 1
    let start = NIODeadline.now() + .milliseconds(1)
    let pace = Pace(total: total)
    /// How many calls are due `nanoseconds` after the start.
    @Sendable func callsDue(by nanoseconds: Int64) -> Int {
        var (low, high) = (0, total)
        while low < high {
            let middle = (low + high) / 2
            if dueTimes[middle] <= nanoseconds { low = middle + 1 } else { high = middle }
        }
        return low
    }
    /// Starts the calls due since the tick before `index` when it comes, on `loop`, and schedules
    /// the loop's next tick.
    @Sendable func schedule(tick index: Int, on loop: any EventLoop, every stride: Int) {
        let at = tick * Int64(index)
        loop.scheduleTask(deadline: start + .nanoseconds(at)) {
            if index + stride < ticks { schedule(tick: index + stride, on: loop, every: stride) }
            for call in callsDue(by: at - tick)..<callsDue(by: at) {
                let due = start + .nanoseconds(dueTimes[call])
                Task(executorPreference: EventLoopTaskExecutor(eventLoop: loop)) {
                    do {
                        try await body(call)
                        pace.record(.nanoseconds((NIODeadline.now() - due).nanoseconds))
                    } catch {
                        pace.record(nil)
                    }
                }
            }
        }
    }
    let began = ContinuousClock.now
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        pace.onFinish(done)
        for (offset, loop) in loops.enumerated() where offset < ticks {
            schedule(tick: offset, on: loop, every: loops.count)
        }
        if total == 0 { pace.finishIfDone() }
    }
    let elapsed = (ContinuousClock.now - began).components
    let failures = pace.failures
    if failures > 0 { print("  (\(failures) calls failed)") }
    return LoadFigures(
        calls: total - failures, seconds: Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18,
        latencies: pace.latencies)
}

/// When the calls of ``runAtRate`` fall due: evenly spaced (wrk2's constant throughput), or a Poisson
/// process of the same mean rate (independent users: gaps drawn from an exponential distribution,
/// bursts included).
enum Arrivals {
    case uniform, poisson
}

/// What the calls of ``runAtRate`` measured, and who to tell when the last one answers.
private final class Pace: Sendable {
    private struct State {
        var latencies: [Duration] = []
        var failures = 0
        var done: CheckedContinuation<Void, Never>?
    }
    private let total: Int
    private let state: Locked<State>

    init(total: Int) {
        self.total = total
        var initial = State()
        initial.latencies.reserveCapacity(total)
        state = Locked(initial)
    }

    func onFinish(_ done: CheckedContinuation<Void, Never>) {
        state.withLock { $0.done = done }
    }

    /// One call's latency; nil for a call that failed.
    func record(_ latency: Duration?) {
        state.withLock {
            if let latency { $0.latencies.append(latency) } else { $0.failures += 1 }
        }
        finishIfDone()
    }

    func finishIfDone() {
        let done: CheckedContinuation<Void, Never>? = state.withLock {
            guard $0.latencies.count + $0.failures == total, let done = $0.done else { return nil }
            $0.done = nil
            return done
        }
        done?.resume()
    }

    var latencies: [Duration] { state.withLock { $0.latencies } }
    var failures: Int { state.withLock { $0.failures } }
}

/// Hands out 0, 1, 2, … to concurrent tasks.
final class BenchCounter: Sendable {
    private let next = Atomic<Int>(0)

    func take() -> Int {
        next.add(1, ordering: .relaxed).oldValue
    }

    var count: Int { next.load(ordering: .relaxed) }
}

/// What the benchmarks read of the services' processes from /proc: their ids, resident memory, open
/// files and CPU time.
enum BenchProcesses {
    /// The only running process whose executable is `name` (`aviary-notifications`); else an error
    /// that ends with `remedy`.
    static func pid(of name: String, remedy: String = "pass --pid") throws -> Int32 {
        let found = pids { $0 == shortName(name) }
        guard found.count == 1 else {
            throw ValidationError("found \(found.count) \(name) processes; \(remedy)")
        }
        return found[0]
    }

    /// Whether process `pid` runs and its executable is `name`.
    static func runs(_ pid: Int32, as name: String) -> Bool {
        comm(pid) == shortName(name)
    }

    /// The processes whose short name (`/proc/<pid>/comm`) satisfies `matching`.
    static func pids(_ matching: (String) -> Bool) -> [Int32] {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap(Int32.init).filter { pid in
            comm(pid).map(matching) ?? false
        } ?? []
    }

    private static func comm(_ pid: Int32) -> String? {
        (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// An executable's name as /proc/<pid>/comm keeps it: its first 15 characters.
    private static func shortName(_ name: String) -> String { String(name.prefix(15)) }

    /// Every service and gateway process of this machine (`aviary-*`; not the `aviary` tool itself).
    static var services: [Int32] { pids { $0.hasPrefix("aviary-") } }

    static func residentMiB(_ pid: Int32) -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        let kib = Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        return kib / 1024
    }

    /// The file descriptors `pid` holds open (the entries of /proc/<pid>/fd); nil when it is gone.
    static func openFiles(_ pid: Int32) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }

    /// User and system CPU seconds `pids` used so far (those that ended count nothing).
    static func cpuSeconds(_ pids: [Int32]) -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return pids.reduce(0) { total, pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return total }
            // After "pid (comm)": state is field 3; utime and stime are fields 14 and 15.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return total }
            return total + (user + system) / ticks
        }
    }
}

/// The value of a series without labels in a `/metrics` answer; 0 when it is not there.
func prometheusSample(_ name: String, in reply: BenchHTTP.Reply) -> Double {
    String(buffer: reply.body).split(separator: "\n").first { $0.hasPrefix(name + " ") }
        .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
}

/// The Postgres statements every process of the local stack has sent
/// (`aviary_postgres_statements_total` on each admin port, background work included: fan-out, the
/// outbox relay, builds), so that a run can print its statements per call. The admin ports are
/// `AVIARY_BENCH_ADMINS` (`host:port,host:port`: every instance of a stack such as
/// deploy/local/cluster.sh's, whose env.sh sets it), else each service's default port on 127.0.0.1.
final class BenchStatements: Sendable {
    private let admins: [BenchHTTP]

    init() {
        let listed = ProcessInfo.processInfo.environment["AVIARY_BENCH_ADMINS"].map {
            $0.split(separator: ",").compactMap { address -> BenchHTTP? in
                guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else { return nil }
                return BenchHTTP(host: String(address[..<colon]), port: port)
            }
        }
        admins = listed ?? ServiceName.allCases.map { BenchHTTP(host: "127.0.0.1", port: $0.defaultAdminPort) }
    }

    /// Every admin port's `/metrics`.
    func metrics() async throws -> [BenchHTTP.Reply] {
        var replies: [BenchHTTP.Reply] = []
        for admin in admins { replies.append(try await admin.request(.GET, "/metrics")) }
        return replies
    }

    func total() async throws -> Double {
        try await metrics().reduce(0) { $0 + prometheusSample("aviary_postgres_statements_total", in: $1) }
    }

    /// `"  Postgres statements per call, …: x"` for `calls` calls made since `before` (a ``total()``;
    /// nil when the admin ports did not answer then, as for a stack on other hosts).
    func perCall(since before: Double?, calls: Int) async -> String {
        guard let before, let now = try? await total() else { return "  Postgres statements per call: not read (no admin port on 127.0.0.1)" }
        return String(
            format: "  Postgres statements per call, every service's, background work included: %.2f", (now - before) / Double(max(1, calls)))
    }

    func close() async {
        for admin in admins { await admin.close() }
    }
}
