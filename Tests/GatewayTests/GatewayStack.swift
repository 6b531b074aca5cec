import AviaryAPI
import AviaryJSON
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RPC
import TestSupport

/// The seven services and a gateway in front of them, on Redis database 5, or on the topology
/// `AVIARY_TEST_TOPOLOGY` names (``ServiceStack/startOnTestTopology(_:redisDatabase:environment:)``);
/// started once per test process. Apps' calls go through the gateway's public port only.
final class GatewayStack: Sendable {
    let stack: ServiceStack

    private init(stack: ServiceStack) {
        self.stack = stack
    }

    /// DeathStarBench's posts (256 characters, six mentions, six links) need more than 280. Every
    /// test calls from 127.0.0.1, hundreds of calls each and the suites at once: the limit per
    /// address is raised past them, and the limits test sets its own on gateways of its own. auth
    /// sends its mail to the test process's SMTP server (``TestServers/smtp()``), and sweeps (ended
    /// sessions, overdue exports) every second.
    private static let started = Task {
        try await GatewayStack(
            stack: ServiceStack.startOnTestTopology(
                ServiceStack.allServices + ["gateway"], redisDatabase: 5,
                environment: [
                    "AVIARY_TWEETS_MAX_LENGTH": "600", "AVIARY_GATEWAY_CALLS_PER_ADDRESS_PER_MINUTE": "1000000",
                    "AVIARY_SMTP_URL": try await TestServers.smtp().url, "AVIARY_MAIL_FROM": "Aviary tests <aviary@example.com>",
                    "AVIARY_AUTH_SESSION_SWEEP_SECONDS": "1",
                    // The Web Push tests' receivers listen on this machine.
                    "AVIARY_PUSH_ALLOW_PRIVATE_ENDPOINTS": "1",
                ]))
    }

    static func shared() async throws -> GatewayStack {
        try await started.value
    }

    var url: String { stack.gatewayURL() }

    /// Another gateway instance on ports of its own (the public one `port` when given: to start one
    /// again where it was), with `environment` added (its own limits, say).
    func extraGateway(_ environment: [String: String], port: Int? = nil) async throws -> (url: String, process: ServiceProcess) {
        let port = try port ?? freePort()
        let process = try await stack.startExtraInstance(
            "gateway", environment: environment.merging(["AVIARY_GATEWAY_PORT": String(port)]) { _, given in given })
        return ("http://127.0.0.1:\(port)", process)
    }

    /// Registers an account through the gateway's `POST /rpc` and returns it.
    func register(_ name: String, through url: String? = nil, forwardedFor: String? = nil) async throws -> EdgeUser {
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let username = "\(name.prefix(6))_\(suffix)"
        let answer = try await EdgeHTTP.rpc(
            url ?? self.url, "auth.register",
            ["email": .string("\(username)@example.com"), "password": "correct horse battery", "username": .string(username),
             "fullname": .string(name)],
            headers: forwardedFor.map { ["X-Forwarded-For": $0] } ?? [:])
        guard let result = answer["result"], let token = result["accessToken"]?.stringValue,
            let id = result["user"]?["id"]?.stringValue
        else { throw EdgeTestError("auth.register through the gateway answered \(answer)") }
        return EdgeUser(id: id, username: username, token: token)
    }
}

struct EdgeUser: Sendable {
    var id: String
    var username: String
    var token: String
}

struct EdgeTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// HTTP through Foundation's URLSession (not Aviary's code), redirects not followed.
enum EdgeHTTP {
    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data

        var json: JSONValue { (try? JSONDecoder().decode(JSONValue.self, from: body)) ?? .null }

        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    private final class NoRedirects: NSObject, URLSessionTaskDelegate {
        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }
    }

    private static let session = URLSession(
        configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)

    static func send(
        _ method: String, _ url: String, body: Data? = nil, headers: [String: String] = [:]
    ) async throws -> Reply {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.httpBody = body
        request.timeoutInterval = 30
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name] = value }
        }
        return Reply(status: http.statusCode, headers: fields, body: data)
    }

    /// `POST /rpc` of one request; the JSON-RPC answer.
    static func rpc(
        _ base: String, _ method: String, _ params: [String: JSONValue] = [:], token: String? = nil,
        headers: [String: String] = [:]
    ) async throws -> JSONValue {
        let reply = try await post(base, method, params, token: token, headers: headers)
        guard reply.status == 200 else {
            throw EdgeTestError("\(method) through the gateway answered HTTP \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
        }
        return reply.json
    }

    static func post(
        _ base: String, _ method: String, _ params: [String: JSONValue] = [:], token: String? = nil,
        headers: [String: String] = [:]
    ) async throws -> Reply {
        let request: JSONValue = ["jsonrpc": "2.0", "id": 1, "method": .string(method), "params": .object(params)]
        var headers = headers
        headers["Content-Type"] = "application/json"
        if let token { headers["Authorization"] = "Bearer \(token)" }
        return try await send("POST", base + "/rpc", body: try JSONEncoder().encode(request), headers: headers)
    }
}

/// The notifications service counts the subscriptions of every test at once
/// (`aviary_subscriptions_active`): the test that checks the count and the tests that subscribe
/// through the Mastodon API take turns, and a turn ends once the count is back where it began.
actor SubscriptionTurns {
    private static let shared = SubscriptionTurns()
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    static func exclusive<T: Sendable>(_ edge: GatewayStack, _ body: () async throws -> T) async throws -> T {
        await shared.acquire()
        let notifications = edge.stack.process("notifications")
        let active = { (try? notifications.metric("aviary_subscriptions_active")) ?? -1 }
        let before = active()
        do {
            let result = try await body()
            _ = await eventually(timeout: .seconds(20)) { active() == before }
            await shared.release()
            return result
        } catch {
            _ = await eventually(timeout: .seconds(20)) { active() == before }
            await shared.release()
            throw error
        }
    }

    private func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}
