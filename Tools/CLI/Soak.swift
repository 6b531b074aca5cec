import ArgumentParser
import Foundation
import Locking
import Logging
import NIOCore
import NIOHTTP1
import Postgres
import Redis
import ServiceKit
import Synchronization

/// `aviary soak`: an hour of mixed load through the gateway, and whether anything the stack holds grows.
struct Soak: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: """
            Mixed load through the gateway for an hour; every ten minutes the calls' errors and latency, each \
            process's memory and open files, and the Postgres and Redis connections; fails when one of them grows.
            """,
        discussion: """
            Runs against a running local stack (deploy/local/stack.sh up). Its eight processes are the ones whose pid \
            files are in --run-folder, where the stack also keeps the Postgres and Redis URLs and the gateway's port \
            (AVIARY_POSTGRES_URL and AVIARY_REDIS_URL win when set); a process without a pid file there is the only one \
            of its name, aviary-<service>. It registers --users users through auth.register (raise \
            AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR and use a test hash cost), each following the --followees after \
            it and posting --posts tweets, and opens a direct conversation from each user to the next. Then it starts \
            --rate calls a second at a steady pace, in turn over POST /rpc and over --call-sockets WebSockets, each as \
            a random user: 50% timeline.home of 20 (checked to be 20 tweets), 20% timeline.user of 10, 10% \
            tweets.create, 10% messaging.send, 10% notifications.list. The gateway's limits must allow the rate \
            (AVIARY_GATEWAY_CALLS_PER_ADDRESS_PER_MINUTE, AVIARY_GATEWAY_CALLS_PER_USER_PER_MINUTE). Access tokens \
            are renewed through auth.refresh at half their lifetime.

            A row before the load and after every interval: the interval's calls, their error rate, p50 and p99 \
            from when each call was due (a failed call counts as a 10 s answer), the CPU time of the eight \
            processes per call, and, read at rest (the interval's calls answered, the soak's idle HTTP connections \
            closed 2 s before), Postgres client connections (pg_stat_activity), Redis connected_clients, and each \
            process's resident memory (VmRSS) and open file descriptors. Then the last interval is compared with \
            the second (the first warms up): the soak exits non-zero when a process ended, when more than 1% of \
            the last interval's calls failed, or when a figure grew past its margin: resident memory by 20% and \
            8 MiB, open files by 20% and 8, Postgres or Redis connections by 20% and 4, CPU per call by 25% and \
            100 µs. Latency is shown, not judged: on a shared machine it moves with the other programs' load, \
            while CPU per call grows only with the work each call takes.
            """)

    @Option(help: "The gateway's public URL (default: the port in --run-folder's gateway.port, else 8080).")
    var gateway: String?

    @Option(help: "Minutes of load: a whole number of intervals, at least three.")
    var minutes = 60

    @Option(help: "Minutes between rows.")
    var intervalMinutes = 10

    @Option(help: "Calls a second, started at a steady pace whatever the answers' pace.")
    var rate = 200

    @Option(help: "Users to register.")
    var users = 40

    @Option(help: "Users each user follows.")
    var followees = 10

    @Option(help: "Tweets each user posts before the load (followees × posts must be at least 20).")
    var posts = 3

    @Option(help: "WebSockets the WebSocket half of the calls is spread over.")
    var callSockets = 4

    @Option(help: "Where deploy/local/stack.sh keeps its pid files, the Postgres and Redis URLs and the gateway's port.")
    var runFolder = ".aviary-local/run"

    func validate() throws {
        guard minutes >= 1, intervalMinutes >= 1 else {
            throw ValidationError("--minutes and --interval-minutes must be at least 1")
        }
        guard minutes % intervalMinutes == 0, minutes / intervalMinutes >= 3 else {
            throw ValidationError(
                "--minutes must be three or more whole intervals of --interval-minutes (a warm-up, the one the last is compared with, and the last), not \(minutes) minutes in intervals of \(intervalMinutes)")
        }
        try validateRate(rate, option: "--rate")
        guard users >= 2, (1..<users).contains(followees), posts >= 1, callSockets >= 1 else {
            throw ValidationError("--users must be at least 2, --followees 1 to one less than --users, --posts and --call-sockets at least 1")
        }
        guard followees * posts >= 20 else {
            throw ValidationError("--followees × --posts must be at least 20, not \(followees * posts): every home read is checked to be a page of 20 tweets")
        }
        if let gateway, URLComponents(string: gateway)?.host == nil {
            throw ValidationError("--gateway must be a URL such as http://127.0.0.1:8080")
        }
    }

    func run() async throws {
        var environment = ProcessInfo.processInfo.environment
        for (variable, file) in [("AVIARY_POSTGRES_URL", "postgres.url"), ("AVIARY_REDIS_URL", "redis.url")]
        where (environment[variable] ?? "").isEmpty {
            environment[variable] = stackFile(file)
        }
        let configuration = try ServiceConfiguration.load(service: .timeline, environment: environment)
        let processes = try SoakProcess.running(in: runFolder)
        let url = URLComponents(string: gateway ?? "http://127.0.0.1:\(stackFile("gateway.port") ?? "8080")")!
        let (host, port) = (url.host!, url.port ?? 80)

        let services = try BenchServices(configuration: configuration, connections: 16)
        let postgres = try PostgresClient(configuration: .init(url: configuration.postgresURL), logger: Logger(label: "soak"))
        let probe = SoakProbe(processes: processes, postgres: postgres, redis: services.redis)
        let before = try await probe.row(minutes: 0, outcome: nil)

        let clock = ContinuousClock.now
        let network = try await services.network(of: users, followees: followees, posts: posts)
        let http = BenchHTTP(host: host, port: port)
        var sockets: [BenchSocket] = []
        for _ in 0..<callSockets { sockets.append(try await BenchSocket.open(host: host, port: port)) }
        let edge = SoakGateway(http: http, sockets: sockets)
        var conversations: [String] = []
        for (index, user) in network.enumerated() {
            conversations.append(try await edge.openDirect(as: user, with: network[(index + 1) % network.count]))
        }
        let sessions = SoakSessions(network)
        let load = SoakLoad(gateway: edge, sessions: sessions, conversations: conversations)
        show("set-up: \(users) users, \(followees) followees and \(posts) posts each, a direct conversation each, in \(TimelineBench.format(ContinuousClock.now - clock))")
        show("\(rate) calls/s for \(minutes) min, a row every \(intervalMinutes) min; each process's cell is its resident MiB/open files")

        let renewal = Task { await sessions.renew(using: services) }
        show(SoakRow.header(processes))
        show(before.line)
        var rows: [SoakRow] = []
        let started = ContinuousClock.now
        let interval = intervalMinutes * 60
        for _ in 0..<(minutes / intervalMinutes) {
            let cpuBefore = BenchProcesses.cpuSeconds(processes.map(\.pid))
            let figures = try await runAtRate(rate, for: .seconds(interval)) { index in try await load.call(index) }
            let cpu = BenchProcesses.cpuSeconds(processes.map(\.pid)) - cpuBefore
            // What the stack holds at rest: the client's idle HTTP connections, as many as the
            // interval's busiest moment needed, would otherwise count in the gateway's files.
            await http.close()
            try await Task.sleep(for: .seconds(2))
            let elapsed = (ContinuousClock.now - started).components
            let row = try await probe.row(
                minutes: (Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18) / 60,
                outcome: BenchOutcome(figures: figures, expected: rate * interval, cpuSeconds: cpu))
            show(row.line)
            rows.append(row)
        }
        renewal.cancel()
        await renewal.value
        for socket in sockets { await socket.close() }
        await http.close()
        await services.shutdown()
        await postgres.shutdown()

        let refreshFailures = sessions.failures
        if refreshFailures > 0 { show("token renewals that failed: \(refreshFailures)") }
        let findings = rows[rows.count - 1].findings(since: rows[1])
        guard findings.isEmpty else {
            show("verdict: FAIL, the last interval against the second:")
            for finding in findings { show("  \(finding)") }
            throw ExitCode(1)
        }
        show("verdict: steady, the last interval against the second: nothing grew past its margin, errors at most 1%")
    }

    /// Prints `line` at once, also into a file or a pipe (where print's output waits for a full
    /// buffer): the rows of an hour's run as they come.
    private func show(_ line: String) {
        print(line)
        fflush(nil)
    }

    /// A file stack.sh keeps in the run folder, trimmed; nil when it is not there or empty.
    private func stackFile(_ name: String) -> String? {
        guard let text = try? String(contentsOfFile: "\(runFolder)/\(name)", encoding: .utf8) else { return nil }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : trimmed
    }
}

/// One of the stack's eight processes.
struct SoakProcess: Sendable {
    /// stack.sh's names (of the pid files, and aviary-<name> the executables), and the short ones of the table.
    static let all: [(name: String, label: String)] = [
        ("auth", "auth"), ("social-graph", "graph"), ("tweets", "tweets"), ("timeline", "timeline"),
        ("notifications", "notif"), ("messaging", "msg"), ("media", "media"), ("gateway", "gateway"),
    ]

    var name: String
    var label: String
    var pid: Int32

    /// Each of them: the pid in `folder`'s <name>.pid when that process runs, else the only process
    /// aviary-<name>.
    static func running(in folder: String) throws -> [SoakProcess] {
        try all.map { name, label in
            let executable = "aviary-\(name)"
            if let text = try? String(contentsOfFile: "\(folder)/\(name).pid", encoding: .utf8),
                let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), BenchProcesses.runs(pid, as: executable)
            {
                return SoakProcess(name: name, label: label, pid: pid)
            }
            let pid = try BenchProcesses.pid(of: executable, remedy: "start the stack (deploy/local/stack.sh up) or give its --run-folder")
            return SoakProcess(name: name, label: label, pid: pid)
        }
    }
}

/// The soak's users, their tokens renewed through auth.refresh while the load runs.
final class SoakSessions: Sendable {
    let count: Int
    private let users: Locked<[BenchUser]>
    private let failed = Atomic<Int>(0)

    init(_ users: [BenchUser]) {
        count = users.count
        self.users = Locked(users)
    }

    func user(_ index: Int) -> BenchUser {
        users.withLock { $0[index] }
    }

    /// Renewals that failed; such a user's calls fail once its access token expires.
    var failures: Int { failed.load(ordering: .relaxed) }

    /// Renews every user's tokens, then again at half the time until the first of them expires,
    /// until the task is cancelled. A renewal that fails is tried again within 10 s.
    func renew(using services: BenchServices) async {
        while !Task.isCancelled {
            var earliest = Date.distantFuture
            for index in 0..<count {
                do {
                    let (renewed, expires) = try await services.refresh(user(index))
                    users.withLock { $0[index] = renewed }
                    earliest = min(earliest, expires)
                } catch {
                    failed.add(1, ordering: .relaxed)
                    earliest = min(earliest, Date() + 20)
                }
            }
            try? await Task.sleep(for: .seconds(max(1, earliest.timeIntervalSinceNow / 2)))
        }
    }
}

/// The soak's calls through the gateway.
struct SoakLoad: Sendable {
    let gateway: SoakGateway
    let sessions: SoakSessions
    /// By user: the direct conversation with the next user.
    let conversations: [String]

    /// The kinds of call of the mix and their weights out of 10.
    private enum Kind: CaseIterable {
        case home, user, create, message, notifications

        var weight: Int {
            switch self {
            case .home: 5
            case .user: 2
            case .create, .message, .notifications: 1
            }
        }

        static func pick(_ pick: Int) -> Kind {
            var bound = 0
            for kind in allCases {
                bound += kind.weight
                if pick < bound { return kind }
            }
            return .notifications
        }
    }

    /// Call `index` of the load, as a random user: over POST /rpc when `index` is even, else over a WebSocket.
    func call(_ index: Int) async throws {
        let caller = BenchRandom.pick(0..<sessions.count)
        let token = sessions.user(caller).token
        let kind = Kind.pick(BenchRandom.pick(0..<10))
        let (method, fields): (String, String) =
            switch kind {
            case .home: ("timeline.home", #""limit":20"#)
            case .user: ("timeline.user", #""userId":"\#(sessions.user(BenchRandom.pick(0..<sessions.count)).id)","limit":10"#)
            case .create: ("tweets.create", #""text":"soak words \#(index)""#)
            case .message: ("messaging.send", #""conversationId":"\#(conversations[caller])","text":"soak words \#(index)""#)
            case .notifications: ("notifications.list", #""limit":20"#)
            }
        let socket = index % 2 == 0 ? nil : gateway.sockets[index / 2 % gateway.sockets.count]
        let answer = try await gateway.send(method, fields, token: token, over: socket)
        if kind == .home {
            try GatewayBench.check(answer)
        } else if !answer.contains(#""result":"#) {
            throw BenchBadReply(text: String(answer.prefix(200)))
        }
    }
}

/// The gateway's two ways in: POST /rpc and WebSockets.
struct SoakGateway: Sendable {
    let http: BenchHTTP
    let sockets: [BenchSocket]

    private struct Opened: Decodable {
        struct Conversation: Decodable { var id: String }
        var result: Conversation
    }

    /// The id of the direct conversation of `user` and `peer` (messaging.openDirect).
    func openDirect(as user: BenchUser, with peer: BenchUser) async throws -> String {
        let answer = try await send("messaging.openDirect", #""userId":"\#(peer.id)""#, token: user.token, over: nil)
        guard let opened = try? JSONDecoder().decode(Opened.self, from: Data(answer.utf8)) else {
            throw BenchBadReply(text: String(answer.prefix(200)))
        }
        return opened.result.id
    }

    /// Calls `method` with the params object of `fields` as the holder of `token`, over `socket` or
    /// else POST /rpc; the answer's text.
    func send(_ method: String, _ fields: String, token: String, over socket: BenchSocket?) async throws -> String {
        if let socket {
            return try await socket.call(method, params: #"{\#(fields),"_meta":{"token":"\#(token)"}}"#)
        }
        let request = #"{"jsonrpc":"2.0","id":1,"method":"\#(method)","params":{\#(fields)}}"#
        let reply = try await http.request(
            .POST, "/rpc", body: ByteBuffer(string: request), headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")])
        guard reply.status == 200 else { throw BenchBadReply(text: "HTTP \(reply.status)") }
        return String(buffer: reply.body)
    }
}

/// Reads what the stack holds: each process's memory and open files, Postgres's and Redis's clients.
struct SoakProbe {
    let processes: [SoakProcess]
    let postgres: PostgresClient
    let redis: RedisClient

    func row(minutes: Double, outcome: BenchOutcome?) async throws -> SoakRow {
        let connections = try await postgres.query("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")
        let info = try await redis.send(["INFO", "clients"]).string ?? ""
        let clients = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("connected_clients:") }
        guard let clients, let redisClients = Int(clients.dropFirst("connected_clients:".count)) else {
            throw BenchBadReply(text: "Redis INFO clients without connected_clients: \(info.prefix(200))")
        }
        return SoakRow(
            minutes: minutes, outcome: outcome,
            processes: processes.map { process in
                BenchProcesses.openFiles(process.pid).map { (BenchProcesses.residentMiB(process.pid), $0) }
            },
            postgresConnections: try connections.first?.decode(Int.self, at: 0) ?? 0, redisClients: redisClients)
    }
}

/// The figures of one row of the soak's table.
struct SoakRow {
    var minutes: Double
    /// The interval's calls; nil for the row before the load.
    var outcome: BenchOutcome?
    /// Each process's resident MiB and open files, in the order of ``SoakProcess/all``; nil once it ended.
    var processes: [(residentMiB: Double, openFiles: Int)?]
    var postgresConnections: Int
    var redisClients: Int

    /// The widths of the columns before the processes', and of each process's.
    private static let widths = [6, 9, 8, 9, 9, 13, 4, 7]
    private static let cell = 11

    static func header(_ processes: [SoakProcess]) -> String {
        zip(["min", "calls", "errors", "p50 ms", "p99 ms", "CPU µs/call", "pg", "redis"], widths).map { pad($0, $1) }.joined()
            + processes.map { pad($0.label, cell) }.joined()
    }

    var line: String {
        let calls =
            outcome.map {
                [
                    String($0.answered.count + $0.failed), String(format: "%.2f%%", $0.errorRate * 100), String(format: "%.2f", $0.p50),
                    String(format: "%.2f", $0.p99), String(format: "%.0f", $0.cpuPerCall * 1e6),
                ]
            } ?? ["0", "-", "-", "-", "-"]
        let figures = [String(format: "%.1f", minutes)] + calls + [String(postgresConnections), String(redisClients)]
        return zip(figures, Self.widths).map { Self.pad($0, $1) }.joined()
            + processes.map { Self.pad($0.map { String(format: "%.1f/%d", $0.residentMiB, $0.openFiles) } ?? "ended", Self.cell) }.joined()
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(1, width - text.count)) + text
    }

    /// What ended, failed or grew past its margin since `earlier`, in words.
    func findings(since earlier: SoakRow) -> [String] {
        var findings: [String] = []
        /// `unit` with its leading space (" MiB"), or empty for a count.
        func judge(_ what: String, _ from: Double, _ to: Double, fraction: Double, amount: Double, unit: String) {
            guard to > from * (1 + fraction), to - from > amount else { return }
            let format = unit.isEmpty ? "%.0f" : "%.1f"
            func text(_ value: Double) -> String { String(format: format, value) + unit }
            findings.append(
                "\(what) grew from \(text(from)) to \(text(to)) "
                    + String(format: "(%+.0f%%; the margin: %.0f%% and ", (to / max(from, 1e-9) - 1) * 100, fraction * 100) + "\(text(amount)))")
        }
        for (index, process) in SoakProcess.all.enumerated() {
            guard let now = processes[index] else {
                findings.append("aviary-\(process.name) ended")
                continue
            }
            guard let then = earlier.processes[index] else { continue }
            judge("aviary-\(process.name) resident memory", then.residentMiB, now.residentMiB, fraction: 0.2, amount: 8, unit: " MiB")
            judge("aviary-\(process.name) open files", Double(then.openFiles), Double(now.openFiles), fraction: 0.2, amount: 8, unit: "")
        }
        judge("Postgres connections", Double(earlier.postgresConnections), Double(postgresConnections), fraction: 0.2, amount: 4, unit: "")
        judge("Redis clients", Double(earlier.redisClients), Double(redisClients), fraction: 0.2, amount: 4, unit: "")
        if let now = outcome, let then = earlier.outcome {
            judge("CPU per call", then.cpuPerCall * 1e6, now.cpuPerCall * 1e6, fraction: 0.25, amount: 100, unit: " µs")
            if now.errorRate > 0.01 {
                findings.append(String(format: "%.2f%% of the last interval's calls failed (more than 1%%)", now.errorRate * 100))
            }
        }
        return findings
    }
}
