import ArgumentParser
import AuthTokens
import AviaryJSON
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import RPC
import ServiceKit

/// `aviary bench gateway`: what the public edge adds to a call, and what idle app sockets cost it.
struct GatewayBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway",
        abstract: """
            timeline.home of 20 directly, through POST /rpc and through the WebSocket, and the Mastodon API's home \
            timeline, at one rate in one run (targets: p99 added ≤ 1 ms at 2,000 calls/s, CPU per call added ≤ 25%; \
            the Mastodon API ≤ 2 ms over timeline.home at 1,000 calls/s); 10,000 idle authenticated WebSockets \
            subscribed to notifications (targets: gateway RSS < 200 MiB, a notification to one of them p99 < 20 ms).
            """,
        discussion: """
            Runs against a running stack with the gateway (addresses from AVIARY_*_ADDRESSES or the defaults; the \
            gateway at --gateway). It registers users through auth.register (raise \
            AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR and use a test hash cost), makes each follow ten others and post \
            three tweets, so that every home timeline holds 30 entries, and the gateway's per-address limit must allow \
            the rate (AVIARY_GATEWAY_CALLS_PER_ADDRESS_PER_MINUTE). The idle sockets' users are synthetic, their tokens \
            signed with --signing-key (AVIARY_TOKEN_SIGNING_KEY, or the database where a default install keeps it), \
            eight per user, so the gateway's AVIARY_GATEWAY_SOCKETS_PER_USER must be at least 8. A failed or \
            unchecked call counts as a 10 s answer in the percentiles and is counted as an error; an answer counts \
            only when it is a page of exactly 20 tweets (statuses for the Mastodon API, each user signed in through an \
            app of the bench's with the password grant). CPU per call is the user and system time of every aviary-* \
            process of this machine during the run, divided by the calls.
            """)

    @Option(help: "The gateway's public URL.")
    var gateway = "http://127.0.0.1:8080"

    @Option(help: "Calls per second of each of the three runs.")
    var rate = 2_000

    @Option(help: "Seconds of each measured run (each after 2 s at the same rate, unrecorded).")
    var seconds = 10

    @Option(help: "WebSockets the WebSocket run spreads its calls over.")
    var callSockets = 8

    @Option(help: "Idle authenticated WebSockets to open, each subscribed to notifications (0 skips it).")
    var idleSockets = 10_000

    @Option(help: "Notifications to time while the idle sockets are open.")
    var samples = 200

    @Option(help: "Seconds the idle sockets stay open after the samples before the gateway's memory is read again: past the 30 s keep-alive ping, what a socket holds for good (0 skips it).")
    var hold = 40

    @Option(name: .customLong("signing-key"), help: "Base64 of the 32-byte Ed25519 token signing seed (default: AVIARY_TOKEN_SIGNING_KEY).")
    var signingKey: String?

    @Option(help: "The process id of the gateway, for its memory (default: the only aviary-gateway process).")
    var pid: Int32?

    func validate() throws {
        try validateRate(rate, option: "--rate")
        guard seconds >= 1, callSockets >= 1, idleSockets >= 0, samples >= 1, hold >= 0 else {
            throw ValidationError("--seconds, --call-sockets and --samples must be at least 1, --idle-sockets and --hold at least 0")
        }
        guard URLComponents(string: gateway)?.host != nil else { throw ValidationError("--gateway must be a URL such as http://127.0.0.1:8080") }
    }

    func run() async throws {
        let configuration = try ServiceConfiguration.load(service: .timeline)
        let services = try BenchServices(configuration: configuration, connections: 16)
        let url = URLComponents(string: gateway)!
        let (host, port) = (url.host!, url.port ?? 80)
        let gatewayPID = try pid ?? BenchProcesses.pid(of: "aviary-gateway")

        var clock = ContinuousClock.now
        let users = try await services.network(of: 40, followees: 10, posts: 3)
        print("set-up: \(users.count) users, 10 followees and 3 posts each (home timelines of 30), in \(TimelineBench.format(ContinuousClock.now - clock))")

        let http = BenchHTTP(host: host, port: port)
        var sockets: [BenchSocket] = []
        for _ in 0..<callSockets { sockets.append(try await BenchSocket.open(host: host, port: port)) }
        let body = #"{"limit":20}"#
        let direct: @Sendable (Int) async throws -> Void = { index in
            let answer = try await services.timeline.send(
                "timeline.home", params: RawJSON(unchecked: Array(body.utf8)), meta: RequestMeta(token: users[index % users.count].token)
            ).result()
            try Self.check(String(decoding: answer.bytes, as: UTF8.self))
        }
        let overHTTP: @Sendable (Int) async throws -> Void = { index in
            let request = #"{"jsonrpc":"2.0","id":1,"method":"timeline.home","params":\#(body)}"#
            let reply = try await http.request(
                .POST, "/rpc", body: ByteBuffer(string: request),
                headers: [("Authorization", "Bearer \(users[index % users.count].token)"), ("Content-Type", "application/json")])
            guard reply.status == 200 else { throw BenchBadReply(text: "HTTP \(reply.status)") }
            try Self.check(String(buffer: reply.body))
        }
        let overSocket: @Sendable (Int) async throws -> Void = { [sockets] index in
            let token = users[index % users.count].token
            let answer = try await sockets[index % sockets.count].call(
                "timeline.home", params: #"{"limit":20,"_meta":{"token":"\#(token)"}}"#)
            try Self.check(answer)
        }
        let mastodonTokens = try await Self.mastodonTokens(for: users, http: http)
        let overMastodon: @Sendable (Int) async throws -> Void = { index in
            let reply = try await http.request(
                .GET, "/api/v1/timelines/home?limit=20", headers: [("Authorization", "Bearer \(mastodonTokens[index % mastodonTokens.count])")])
            let answer = String(buffer: reply.body)
            guard reply.status == 200, Self.occurrences(of: #""reblogs_count":"#, in: answer) == 20 else {
                throw BenchBadReply(text: "HTTP \(reply.status) \(answer.prefix(200))")
            }
        }
        var figures: [(String, BenchOutcome)] = []
        for (name, call) in [("direct RPC", direct), ("POST /rpc", overHTTP), ("WebSocket", overSocket), ("Mastodon API", overMastodon)] {
            _ = try await runAtRate(rate, for: .seconds(2), call)
            let pids = BenchProcesses.services
            let cpuBefore = BenchProcesses.cpuSeconds(pids)
            let run = try await runAtRate(rate, for: .seconds(seconds), call)
            let cpu = BenchProcesses.cpuSeconds(pids) - cpuBefore
            let outcome = BenchOutcome(figures: run, expected: rate * seconds, cpuSeconds: cpu)
            figures.append((name, outcome))
            print("timeline.home of 20, \(name), \(rate) calls/s for \(seconds) s: \(outcome.summary)")
        }
        let base = figures[0].1
        for (name, outcome) in figures.dropFirst(1).prefix(2) {
            print(String(
                format: "  %@ adds p99 %+.2f ms (target ≤ 1 ms), CPU per call %+.0f%% of the direct call's (target ≤ 25%%)",
                name, outcome.p99 - base.p99, (outcome.cpuPerCall / base.cpuPerCall - 1) * 100))
        }
        print(String(
            format: "  the Mastodon API adds p99 %+.2f ms to the direct call, %+.2f ms to POST /rpc (target ≤ 2 ms at 1,000 calls/s)",
            figures[3].1.p99 - base.p99, figures[3].1.p99 - figures[1].1.p99))
        for socket in sockets { await socket.close() }
        await http.close()

        guard idleSockets > 0 else { return await services.shutdown() }
        clock = ContinuousClock.now
        let seed = try await BenchSecrets.signingSeed(
            signingKey ?? ProcessInfo.processInfo.environment["AVIARY_TOKEN_SIGNING_KEY"], postgresURL: configuration.postgresURL)
        let issuer = try await AccessTokenIssuer(keys: TokenKeys(signingSeed: seed), lifetime: .seconds(3600))
        let before = BenchProcesses.residentMiB(gatewayPID)
        let idle = try await Self.openIdle(idleSockets, host: host, port: port, issuer: issuer)
        let after = BenchProcesses.residentMiB(gatewayPID)
        print(String(
            format: "%d idle WebSockets subscribed to notifications (8 per user), opened in %@: gateway RSS %.1f MiB before, %.1f MiB after (%.1f KiB each)   (target < 200 MiB)",
            idle.count, TimelineBench.format(ContinuousClock.now - clock), before, after, (after - before) * 1024 / Double(max(1, idle.count))))

        // A real recipient among them, followed by one new user at a time; each latency runs from the
        // follow call to the push of its notification on the recipient's socket.
        let recipient = try await services.register(1)[0]
        let actors = try await services.register(samples)
        let socket = try await BenchSocket.open(host: host, port: port, token: recipient.token)
        _ = try await socket.call("notifications.subscribe", params: "{}")
        var latencies: [Duration] = []
        var missed = 0
        for actor in actors {
            let watch = socket.watch(for: actor.id)
            let began = ContinuousClock.now
            try await services.follow(actor, recipient)
            if await watch.wait(timeout: .seconds(10)) { latencies.append(ContinuousClock.now - began) } else { missed += 1 }
        }
        let delivery = BenchOutcome(
            figures: LoadFigures(calls: latencies.count, seconds: 1, latencies: latencies), expected: actors.count, cpuSeconds: 0)
        print("a notification to 1 of \(idle.count + 1) sockets, from the follow call to the push on the socket: \(actors.count) samples, \(missed) missed" + String(format: "  p50 %.2f ms  p99 %.2f ms", delivery.p50, delivery.p99) + "   (target p99 < 20 ms)")
        if hold > 0 {
            try await Task.sleep(for: .seconds(hold))
            let held = BenchProcesses.residentMiB(gatewayPID)
            print(String(
                format: "the same sockets %d s later (past the 30 s keep-alive ping), %d of them open: gateway RSS %.1f MiB (%.1f KiB each)   (target < 200 MiB)",
                hold, idle.count { $0.isOpen }, held, (held - before) * 1024 / Double(max(1, idle.count))))
        }
        await socket.close()
        for socket in idle { await socket.close() }
        await services.shutdown()
    }

    /// A Mastodon token of each of `users`: one app of the bench's (scope read), then each user's
    /// password grant, as a Mastodon app signs in.
    private static func mastodonTokens(for users: [BenchUser], http: BenchHTTP) async throws -> [String] {
        struct App: Decodable { var client_id: String; var client_secret: String }
        struct Token: Decodable { var access_token: String }
        func post<Answer: Decodable>(_ path: String, _ fields: [String: String], as: Answer.Type) async throws -> Answer {
            let reply = try await http.request(
                .POST, path, body: ByteBuffer(bytes: try JSONEncoder().encode(fields)), headers: [("Content-Type", "application/json")])
            guard reply.status == 200 else { throw BenchBadReply(text: "\(path): HTTP \(reply.status) \(String(buffer: reply.body).prefix(200))") }
            return try JSONDecoder().decode(Answer.self, from: Data(reply.body.readableBytesView))
        }
        let app = try await post(
            "/api/v1/apps", ["client_name": "aviary bench", "redirect_uris": "urn:ietf:wg:oauth:2.0:oob", "scopes": "read"], as: App.self)
        var tokens: [String] = []
        for user in users {
            tokens.append(
                try await post(
                    "/oauth/token",
                    ["grant_type": "password", "username": user.username, "password": user.password, "client_id": app.client_id,
                     "client_secret": app.client_secret, "scope": "read"], as: Token.self
                ).access_token)
        }
        return tokens
    }

    /// Throws unless `answer` is a result holding a page of 20 tweets.
    static func check(_ answer: String) throws {
        guard occurrences(of: #""error":"#, in: answer) == 0, occurrences(of: #""author":"#, in: answer) == 20 else {
            throw BenchBadReply(text: String(answer.prefix(200)))
        }
    }

    /// How many times `needle` occurs in `text`, searched as UTF-8 bytes: Foundation's
    /// `components(separatedBy:)` cost the load generator, which shares the machine with the
    /// services, most of a core at 1,000 Mastodon pages a second.
    static func occurrences(of needle: String, in text: String) -> Int {
        var (text, needle) = (text, needle)
        return text.withUTF8 { haystack in
            needle.withUTF8 { needle in
                guard let start = haystack.baseAddress, let pattern = needle.baseAddress else { return 0 }
                var (count, offset) = (0, 0)
                while offset + needle.count <= haystack.count,
                    let hit = memchr(start + offset, Int32(pattern.pointee), haystack.count - needle.count - offset + 1)
                {
                    let at = start.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    let matches = memcmp(start + at, pattern, needle.count) == 0
                    count += matches ? 1 : 0
                    offset = at + (matches ? needle.count : 1)
                }
                return count
            }
        }
    }

    /// `count` sockets of synthetic users (eight each), each subscribed to notifications, opened 32 at a time.
    private static func openIdle(_ count: Int, host: String, port: Int, issuer: AccessTokenIssuer) async throws -> [BenchSocket] {
        let base = Int64.random(in: 1 << 40 ... 1 << 50)
        return try await withThrowingTaskGroup(of: BenchSocket.self) { group in
            var opened: [BenchSocket] = []
            var next = 0
            func add() {
                let index = next
                next += 1
                group.addTask {
                    let user = base + Int64(index / 8)
                    let token = try await issuer.issue(userID: user, sessionID: user).token
                    let socket = try await BenchSocket.open(host: host, port: port, token: token)
                    let answer = try await socket.call("notifications.subscribe", params: "{}")
                    guard answer.contains(#""subscription""#) else { throw BenchBadReply(text: answer) }
                    return socket
                }
            }
            while next < min(count, 32) { add() }
            for try await socket in group {
                opened.append(socket)
                if next < count { add() }
            }
            return opened
        }
    }
}
