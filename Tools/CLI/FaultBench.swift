import ArgumentParser
import AviaryJSON
import Foundation
import Locking
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceKit

/// `aviary bench faults`: the mix of issue 39 through the gateway while a storage server is down.
struct FaultBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "faults",
        abstract: """
            60% home reads, 30% user-timeline reads and 10% posts through POST /rpc at one rate, while --stop takes \
            a dependency away and --start brings it back (targets: during a 3 s Redis outage ≥ 95% of each kind \
            succeed, during a 3 s Postgres restart ≥ 90% of the reads; every acknowledged post on every follower's \
            home within 5 s of the return).
            """,
        discussion: """
            The commands run through /bin/sh, e.g. on the local stack: --stop 'deploy/local/stack.sh stop redis' \
            --start 'deploy/local/stack.sh start redis'. A call counts as during the outage when it starts between \
            the start of --stop and the end of --start; a failed call counts in the percentiles as 10 s.
            """)

    @Option(help: "The gateway's public URL.")
    var gateway = "http://127.0.0.1:8080"

    @Option(help: "Calls per second, steady (Poisson would only add noise to a 3 s window).")
    var rate = 800

    @Option(help: "Users registered, each following the next --followees around a circle.")
    var users = 100

    @Option(help: "How many users each follows.")
    var followees = 10

    @Option(help: "Seconds of load before --stop runs.")
    var before = 5

    @Option(help: "Seconds between the end of --stop and the start of --start.")
    var outage = 3

    @Option(help: "Seconds of load after --start ends.")
    var after = 5

    @Option(help: "Shell command that takes the dependency away.")
    var stop: String

    @Option(help: "Shell command that brings it back (it should return once the dependency answers).")
    var start: String

    func validate() throws {
        try validateRate(rate, option: "--rate")
        guard users >= 2, (1..<users).contains(followees), before >= 1, outage >= 1, after >= 1 else {
            throw ValidationError("--users must be at least 2, --followees from 1 to --users less 1, --before, --outage and --after at least 1")
        }
        guard URLComponents(string: gateway)?.host != nil else { throw ValidationError("--gateway must be a URL such as http://127.0.0.1:8080") }
    }

    enum Kind: String, CaseIterable { case home, user, post }

    struct Call {
        var kind: Kind
        var started: ContinuousClock.Instant
        var took: Duration
        var failure: String?
    }

    func run() async throws {
        let configuration = try ServiceConfiguration.load(service: .timeline)
        let services = try BenchServices(configuration: configuration, connections: 16)
        let url = URLComponents(string: gateway)!
        let http = BenchHTTP(host: url.host!, port: url.port ?? 80)
        let (users, followees) = (self.users, self.followees)

        let setUp = ContinuousClock.now
        let people = try await services.network(of: users, followees: followees, posts: 3)
        print("set-up: \(users) users, each following the next \(followees), 3 posts each, in \(TimelineBench.format(ContinuousClock.now - setUp))")

        let calls = Locked<[Call]>([])
        let posts = Locked<[(author: Int, id: String)]>([])
        let seconds = before + outage + after
        let load = Task {
            try await runAtRate(rate, for: .seconds(seconds)) { index in
                let kind: Kind = index % 10 == 0 ? .post : index % 10 < 4 ? .user : .home
                let who = BenchRandom.pick(0..<users)
                let request: String
                switch kind {
                case .home: request = #"{"jsonrpc":"2.0","id":1,"method":"timeline.home","params":{"limit":20}}"#
                case .user:
                    request = #"{"jsonrpc":"2.0","id":1,"method":"timeline.user","params":{"userId":"\#(people[(who + 1) % users].id)","limit":20}}"#
                case .post: request = #"{"jsonrpc":"2.0","id":1,"method":"tweets.create","params":{"text":"fault bench \#(index)"}}"#
                }
                let started = ContinuousClock.now
                var failure: String?
                do {
                    let reply = try await http.request(
                        .POST, "/rpc", body: ByteBuffer(string: request),
                        headers: [("Authorization", "Bearer \(people[who].token)"), ("Content-Type", "application/json")])
                    let answer = Self.answer(reply)
                    if let id = Self.check(answer, kind: kind) {
                        if kind == .post { posts.withLock { $0.append((who, id)) } }
                    } else {
                        failure = Self.reason(answer, status: reply.status)
                    }
                } catch {
                    failure = "\(error)"
                }
                calls.withLock { $0.append(Call(kind: kind, started: started, took: started.duration(to: .now), failure: failure)) }
                if let failure { throw BenchBadReply(text: failure) }
            }
        }
        try await Task.sleep(for: .seconds(before))
        let down = ContinuousClock.now
        try await Self.shell(stop)
        try await Task.sleep(for: .seconds(outage))
        try await Self.shell(start)
        let back = ContinuousClock.now
        _ = try await load.value

        print("\(rate) calls/s through POST /rpc for \(seconds) s; the dependency away from --stop to the end of --start, \(TimelineBench.format(back - down)):")
        let all = calls.withLock { $0 }
        for kind in Kind.allCases {
            let during = all.filter { $0.kind == kind && $0.started >= down && $0.started < back }
            let outside = all.filter { $0.kind == kind && ($0.started < down || $0.started >= back) }
            print("  \(kind): during \(Self.describe(during)); otherwise \(Self.describe(outside))")
        }

        // Every acknowledged post on every follower's home timeline within 5 s of the return.
        let acknowledged = posts.withLock { $0 }
        var missing = 0
        var checked = 0
        for (index, viewer) in people.enumerated() {
            let authors = Set((0...followees).map { (index + $0) % users })
            let expected = Set(acknowledged.filter { authors.contains($0.author) }.map(\.id))
            guard !expected.isEmpty else { continue }
            checked += expected.count
            var seen = Set<String>()
            repeat {
                seen = try await Self.home(of: viewer, through: http)
                if expected.isSubset(of: seen) { break }
                try await Task.sleep(for: .milliseconds(100))
            } while ContinuousClock.now < back + .seconds(5)
            missing += expected.subtracting(seen).count
        }
        print("  acknowledged posts on their followers' homes 5 s after the return: \(checked - missing) of \(checked) (home, post) pairs (\(missing) missing)")
        await http.close()
        await services.shutdown()
    }

    /// The ids on every page of `viewer`'s home timeline (pages of 100, following the cursors).
    static func home(of viewer: BenchUser, through http: BenchHTTP) async throws -> Set<String> {
        var seen = Set<String>()
        var cursor = ""
        repeat {
            let params = cursor.isEmpty ? #"{"limit":100}"# : #"{"limit":100,"cursor":"\#(cursor)"}"#
            let reply = try await http.request(
                .POST, "/rpc", body: ByteBuffer(string: #"{"jsonrpc":"2.0","id":1,"method":"timeline.home","params":\#(params)}"#),
                headers: [("Authorization", "Bearer \(viewer.token)"), ("Content-Type", "application/json")])
            let page = answer(reply)?.result
            seen.formUnion((page?.items ?? []).map(\.id))
            cursor = page?.nextCursor ?? ""
        } while !cursor.isEmpty
        return seen
    }

    /// What the bench reads of a JSON-RPC answer (a page, a new tweet or an error); the rest is
    /// skipped, so that decoding 800 answers a second takes the load generator little CPU.
    struct Answer: Decodable {
        struct Result: Decodable {
            struct Item: Decodable { var id: String }
            /// A new tweet's.
            var id: String?
            /// A page's.
            var items: [Item]?
            var nextCursor: String?
        }
        struct Failure: Decodable {
            struct Details: Decodable { var reason: String? }
            var code: Int
            var message: String
            var data: Details?
        }
        var result: Result?
        var error: Failure?
    }

    /// A reply's answer; nil when it is not one.
    static func answer(_ reply: BenchHTTP.Reply) -> Answer? {
        try? WireDecoding.decode(Answer.self, from: Data(reply.body.readableBytesView))
    }

    /// The new tweet's id for a post's answer, "" for a read's page, nil for anything else.
    static func check(_ answer: Answer?, kind: Kind) -> String? {
        guard let result = answer?.result else { return nil }
        switch kind {
        case .home, .user: return result.items == nil ? nil : ""
        case .post: return result.id
        }
    }

    /// A failed answer's error code and reason, or its HTTP status.
    static func reason(_ answer: Answer?, status: Int) -> String {
        guard let error = answer?.error else { return "HTTP \(status)" }
        return "\(error.code) \(error.data?.reason ?? error.message)"
    }

    /// Success rate, percentiles (a failure counted as the call timeout) and the failures by reason.
    static func describe(_ calls: [Call]) -> String {
        let failed = calls.filter { $0.failure != nil }
        let latencies = calls.map { $0.failure == nil ? $0.took : BenchSocket.callTimeout }
        let figures = LoadFigures(calls: calls.count, seconds: 1, latencies: latencies)
        let reasons = Dictionary(grouping: failed.compactMap(\.failure), by: { $0 }).mapValues(\.count)
            .sorted { $0.value > $1.value }.prefix(3).map { "\($0.value)× \($0.key)" }.joined(separator: ", ")
        return String(
            format: "%d of %d succeeded (%.1f%%), p50 %.2f ms p99 %.2f ms",
            calls.count - failed.count, calls.count, Double(calls.count - failed.count) * 100 / Double(max(1, calls.count)),
            figures.percentile(0.5), figures.percentile(0.99)) + (reasons.isEmpty ? "" : "; failures: \(reasons)")
    }

    /// Runs `command` through /bin/sh and waits for it, on NIO's thread pool; a non-zero exit is an
    /// error. `system` waits for the shell alone: Foundation's `Process` would also wait for a
    /// daemon the command starts (redis-server --daemonize), which keeps its socket open.
    static func shell(_ command: String) async throws {
        let status = try await NIOThreadPool.singleton.runIfActive { system(command) }
        guard status == 0 else { throw ValidationError("'\(command)' exited with status \(status)") }
    }
}
