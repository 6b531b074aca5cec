import AviaryJSON
import Foundation
import Logging
import RPC

struct SubtractParams: Codable, Sendable {
    var minuend: Int
    var subtrahend: Int
}

struct SumParams: Codable, Sendable {
    var values: [Int]
}

struct EchoParams: Codable, Sendable {
    var value: JSONValue
}

struct SleepParams: Codable, Sendable {
    var milliseconds: Int
}

enum Tone: String, Codable, Sendable, JSONSchemaEnum {
    case plain, loud
}

struct SayParams: Codable, Sendable {
    var tone: Tone
}

struct WhoAmI: Codable, Sendable {
    var userID: Int64
}

/// Accepts the token "good-token" as user 42 and "sesame" as the service credential.
struct TestAuthenticator: RPCAuthenticator {
    func authenticate(token: String) async throws(RPCError) -> RPCPrincipal {
        if token == "outage" { throw .unavailable("cannot check the session right now; retry shortly") }
        guard token == "good-token" else { throw .unauthenticated("the access token is not valid") }
        return RPCPrincipal(userID: 42, sessionID: 7)
    }

    func isServiceCredential(_ credential: String) -> Bool { credential == "sesame" }
}

/// A router with the methods of the JSON-RPC 2.0 specification's examples, plus a few for the contract's rules.
func makeTestRouter() -> RPCRouter {
    var router = RPCRouter(service: "test", version: "1.0.0", logger: Logger(label: "test"), authenticator: TestAuthenticator())
    router.register("subtract", summary: "minuend - subtrahend", access: .anonymous) { (params: SubtractParams, _) in
        params.minuend - params.subtrahend
    }
    router.register("sum", summary: "Adds values.", access: .anonymous) { (params: SumParams, _) in
        params.values.reduce(0, +)
    }
    router.register("update", summary: "A notification target.", access: .anonymous) { (_: Empty, _) in Empty() }
    router.register("notify_hello", summary: "A notification target.", access: .anonymous) { (_: Empty, _) in Empty() }
    router.register("get_data", summary: "Returns data.", access: .anonymous) { (_: Empty, _) -> JSONValue in
        ["hello", 5]
    }
    router.register("echo", summary: "Returns its value.", access: .anonymous) { (params: EchoParams, _) in params.value }
    router.register("sleep", summary: "Answers after a while.", access: .anonymous) { (params: SleepParams, _) in
        try await Task.sleep(for: .milliseconds(params.milliseconds))
        return params.milliseconds
    }
    router.register("say", summary: "Returns its tone.", access: .anonymous) { (params: SayParams, _) in params.tone.rawValue }
    router.register("whoami", summary: "The caller.", access: .user) { (_: Empty, context) in
        WhoAmI(userID: try context.requireUser())
    }
    router.register("secret", summary: "Internal only.", access: .internal) { (_: Empty, _) in "classified" }
    router.register("whoever", summary: "The caller if signed in, else 0 (-1: a token that could not be checked).", access: .anonymous) {
        (_: Empty, context) in
        context.principal?.userID ?? (context.tokenUnchecked ? -1 : 0)
    }
    router.register("meta", summary: "Returns the request's metadata.", access: .anonymous) { (_: Empty, context) in
        context.meta
    }
    router.register("downstreamMeta", summary: "Returns the _meta a downstream call would carry.", access: .anonymous) {
        (_: Empty, context) in
        context.downstreamMeta()
    }
    router.register("fail", summary: "Throws a Swift error that is not an RPC error.", access: .anonymous) {
        (_: Empty, _) -> Empty in
        throw CocoaError(.fileNoSuchFile)
    }
    return router
}

extension RPCRouter {
    /// The router's answer to one frame, as text (nil when it sends nothing).
    func answer(_ frame: String) async -> String? {
        await respond(to: Data(frame.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// Parses a JSON text for assertions.
func json(_ text: String?) -> JSONValue? {
    guard let text else { return nil }
    return try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
}
