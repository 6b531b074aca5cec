import ArgumentParser
import AuthTokens
import AviaryJSON
import CArgon2
import Foundation
import Logging
import RPC
import Redis

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `aviary bench auth`: the cost of a password check, of token verification, and of the auth
/// service's sign-in and profile reads. The service part needs a running `aviary-auth` whose rate
/// limits are raised (`AVIARY_AUTH_LOGIN_PER_ACCOUNT_PER_MINUTE`, `…_PER_ADDRESS_PER_MINUTE`,
/// `AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR`), and social-graph running for real follower counts.
struct AuthBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "auth",
        abstract: """
            Argon2id hash time; token verification (target ≥ 100,000/s on one core); logins/s against a running \
            aviary-auth (login path minus the hash < 1 ms); auth.getUser with stats p99 at a fixed rate.
            """)

    @Option(help: "The auth service (host:port); default AVIARY_AUTH_ADDRESSES or 127.0.0.1:7101.")
    var address: String?

    @Option(help: "The auth service's admin port (host:port), to read the hash time out of /metrics; default the RPC host, port 7201.")
    var admin: String?

    @Option(help: "The Redis the services use, for the revocation check of token verification; default AVIARY_REDIS_URL or redis://127.0.0.1:6379.")
    var redis: String?

    @Option(help: "Seconds per service scenario.")
    var seconds = 5

    @Option(help: "Concurrent logins in the throughput run.")
    var workers = 8

    @Option(help: "auth.getUser calls per second in the latency run.")
    var rate = 1000

    @Flag(help: "Only the in-process figures (hash time, token verification); no service needed.")
    var inProcessOnly = false

    @Flag(help: "Skip the login runs (only auth.getUser against the service).")
    var skipLogins = false

    func validate() throws {
        try validateRate(rate, option: "--rate")
    }

    func run() async throws {
        let target = address ?? ProcessInfo.processInfo.environment["AVIARY_AUTH_ADDRESSES"]?.split(separator: ",").first.map(String.init)
            ?? "127.0.0.1:7101"
        let hash = measureHashing()
        print(String(format: "argon2id m=19456 KiB t=2 p=1: hash %.1f ms, verify %.1f ms (median of 10, one thread)", hash.hash, hash.verify))
        guard !skipLogins else {
            return try await measureService(at: target, verifyMilliseconds: hash.verify)
        }
        guard !inProcessOnly else { return try await measureTokenVerification(revocationsAt: nil) }
        try await measureTokenVerification(
            revocationsAt: redis ?? ProcessInfo.processInfo.environment["AVIARY_REDIS_URL"] ?? "redis://127.0.0.1:6379")
        try await measureService(at: target, verifyMilliseconds: hash.verify)
    }

    /// One thread, so the figure is the latency a login pays, not a throughput.
    private func measureHashing() -> (hash: Double, verify: Double) {
        let password = Array("correct horse battery staple".utf8)
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255) }
        var encoded = [CChar](repeating: 0, count: 256)
        var hashTimes: [Double] = []
        var verifyTimes: [Double] = []
        for _ in 0..<10 {
            let started = ContinuousClock.now
            _ = argon2id_hash_encoded(2, 19 * 1024, 1, password, password.count, salt, salt.count, 32, &encoded, encoded.count)
            hashTimes.append(milliseconds(since: started))
            let verifying = ContinuousClock.now
            _ = argon2id_verify(encoded, password, password.count)
            verifyTimes.append(milliseconds(since: verifying))
        }
        return (median(hashTimes), median(verifyTimes))
    }

    /// Token verification in one task, as every call to a service pays it: `AccessTokenVerifier.verify`,
    /// the signature (checked once per token, then cached) and, given a Redis, the session looked up
    /// in the process's watched copy of the revoked ones. Cold: 20,000 distinct tokens once each;
    /// warm: 1,000,000 calls spread over those 20,000 tokens (20,000 clients' calls), not one token
    /// again and again.
    private func measureTokenVerification(revocationsAt redisURL: String?) async throws {
        let keys = try TokenKeys(signingSeed: (0..<32).map { _ in UInt8.random(in: 0...255) })
        let issuer = try await AccessTokenIssuer(keys: keys, lifetime: .seconds(900))
        var watch: (client: RedisClient, revocations: SessionRevocations, task: Task<Void, Never>)?
        if let redisURL {
            let client = RedisClient(configuration: try RedisConfiguration(url: redisURL), logger: Logger(label: "bench"))
            let revocations = SessionRevocations(redis: client, tokenLifetime: .seconds(900))
            watch = (client, revocations, Task { await revocations.watch(logger: Logger(label: "bench")) })
            let watching = ContinuousClock.now
            while !revocations.isWatching {
                guard ContinuousClock.now - watching < .seconds(5) else {
                    throw ValidationError("could not watch session revocations in the Redis at \(redisURL)")
                }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        defer {
            if let watch {
                watch.task.cancel()
                Task { await watch.client.shutdown() }
            }
        }
        let verifier = await AccessTokenVerifier(keys: keys, revocations: watch?.revocations)
        var tokens: [String] = []
        for index in 0..<20_000 { tokens.append(try await issuer.issue(userID: Int64(index + 1), sessionID: Int64(index + 1)).token) }

        var started = ContinuousClock.now
        for token in tokens { _ = try await verifier.verify(token) }
        let cold = Double(tokens.count) / (milliseconds(since: started) / 1000)

        let warmCount = 1_000_000
        started = ContinuousClock.now
        for index in 0..<warmCount { _ = try await verifier.verify(tokens[index % tokens.count]) }
        let warm = Double(warmCount) / (milliseconds(since: started) / 1000)
        let checks = watch == nil ? "signature and claims; revocations not checked (no Redis)" : "signature and claims, and the revocation in the watched copy"
        print(String(format: "token verification, one task (%@): cold (signature checked) %.0f/s, warm (cached signature, 20,000 tokens) %.0f/s   (target ≥ 100,000/s)", checks, cold, warm))
    }

    private func measureService(at address: String, verifyMilliseconds: Double) async throws {
        var configuration = RPCClient.Configuration(addresses: [address])
        configuration.connectionsPerAddress = 8
        let client = RPCClient(configuration: configuration, logger: Logger(label: "bench"))
        defer { Task { await client.shutdown() } }
        let password = "bench password 1"
        let login = try await register(client, password: password)
        let other = try await register(client, password: password)

        if !skipLogins {
            let adminAddress = admin ?? (address.split(separator: ":").first.map { "\($0):7201" } ?? "127.0.0.1:7201")
            do {
                try await measureLogins(
                    client, username: login.username, password: password, verifyMilliseconds: verifyMilliseconds,
                    metrics: URL(string: "http://\(adminAddress)/metrics"))
            } catch let error as RPCError where error.reason == "rate_limited" {
                throw ValidationError(
                    "auth limited the logins (\(error.message)): raise AVIARY_AUTH_LOGIN_PER_ACCOUNT_PER_MINUTE and "
                        + "AVIARY_AUTH_LOGIN_PER_ADDRESS_PER_MINUTE for the run, or pass --skip-logins")
            }
        }
        let params = try RawJSON(encoding: ["userId": other.id])
        let meta = RequestMeta(token: login.token)
        _ = try await client.send("auth.getUser", params: params, meta: meta).result()
        let statements = BenchStatements()
        let before = try? await statements.total()
        let figures = try await runAtRate(rate, for: .seconds(seconds)) { _ in
            _ = try await client.send("auth.getUser", params: params, meta: meta).result()
        }
        print("auth.getUser (another user, with stats) at \(rate) calls/s: \(figures.summary)")
        print(await statements.perCall(since: before, calls: figures.calls))
        await statements.close()
    }

    private func measureLogins(
        _ client: RPCClient, username: String, password: String, verifyMilliseconds: Double, metrics: URL?
    ) async throws {
        let statements = BenchStatements()
        defer { Task { await statements.close() } }
        let before = await serviceMeans(metrics)
        let statementsBefore = try? await statements.total()
        let sequential = try await runLoad(workers: 1, duration: .seconds(seconds)) { _ in
            _ = try await client.send("auth.login", params: try RawJSON(encoding: ["login": username, "password": password])).result()
        }
        let after = await serviceMeans(metrics)
        print("auth.login, one at a time:        \(sequential.summary)")
        print(await statements.perCall(since: statementsBefore, calls: sequential.calls))
        if let before, let after, after.loginCount > before.loginCount, after.verifyCount > before.verifyCount {
            // The service's own timings of the same calls: everything but the hash, as the service saw it.
            let login = (after.loginSum - before.loginSum) / Double(after.loginCount - before.loginCount) * 1000
            let verify = (after.verifySum - before.verifySum) / Double(after.verifyCount - before.verifyCount) * 1000
            print(String(format: "  in the service: login %.2f ms, of which the password check %.2f ms; the rest %.2f ms   (target < 1 ms)", login, verify, login - verify))
        } else {
            print(String(format: "  login path besides the password check (client p50 - verify): %.2f ms   (target < 1 ms)", sequential.percentile(0.5) - verifyMilliseconds))
        }
        let parallel = try await runLoad(workers: workers, duration: .seconds(seconds)) { _ in
            _ = try await client.send("auth.login", params: try RawJSON(encoding: ["login": username, "password": password])).result()
        }
        print("auth.login, \(workers) concurrent:          \(parallel.summary)")
    }

    private struct ServiceMeans {
        var loginSum = 0.0
        var loginCount = 0
        var verifySum = 0.0
        var verifyCount = 0
    }

    /// Sums and counts of `auth.login` durations and password verifications, from the service's
    /// Prometheus histograms; nil when the admin port cannot be read.
    private func serviceMeans(_ url: URL?) async -> ServiceMeans? {
        guard let url else { return nil }
        let text: String? = await withCheckedContinuation { continuation in
            var request = URLRequest(url: url)
            request.timeoutInterval = 2
            URLSession.shared.dataTask(with: request) { data, _, _ in
                continuation.resume(returning: data.map { String(decoding: $0, as: UTF8.self) })
            }.resume()
        }
        guard let text else { return nil }
        var means = ServiceMeans()
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let value = Double(parts[1]) else { continue }
            let name = parts[0]
            if name.contains(#"rpc_method="auth.login""#) {
                if name.hasPrefix("rpc_server_duration_seconds_sum") { means.loginSum = value }
                if name.hasPrefix("rpc_server_duration_seconds_count") { means.loginCount = Int(value) }
            } else if name.contains(#"operation="verify""#) {
                if name.hasPrefix("auth_password_hash_seconds_sum") { means.verifySum = value }
                if name.hasPrefix("auth_password_hash_seconds_count") { means.verifyCount = Int(value) }
            }
        }
        return means
    }

    private struct Registered: Decodable {
        struct UserID: Decodable {
            var id: String
            var username: String
        }
        var user: UserID
        var accessToken: String
        var id: String { user.id }
        var username: String { user.username }
        var token: String { accessToken }
    }

    private func register(_ client: RPCClient, password: String) async throws -> Registered {
        let name = "bench" + String(UInt64.random(in: 0...UInt64.max), radix: 36).prefix(10)
        do {
            return try await client.call(
                "auth.register",
                params: ["email": "\(name)@bench.example", "password": password, "username": name, "fullname": "Bench User"],
                as: Registered.self)
        } catch let error as RPCError where error.reason == "rate_limited" {
            throw ValidationError(
                "the service refused registration (rate limited); start it with AVIARY_AUTH_REGISTER_PER_ADDRESS_PER_HOUR, "
                    + "AVIARY_AUTH_LOGIN_PER_ACCOUNT_PER_MINUTE and AVIARY_AUTH_LOGIN_PER_ADDRESS_PER_MINUTE raised")
        }
    }

    private func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = (ContinuousClock.now - start).components
        return Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15
    }
}
