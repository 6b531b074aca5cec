import ArgumentParser
import AviaryClient
import AviaryJSON
import Foundation
import Logging
import RPC
import ServiceKit

/// `aviary call <service|host:port|gateway URL> <method> [params]`: one JSON-RPC call, its answer
/// pretty-printed.
struct Call: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Call a method of a service and print the result.",
        discussion: """
            The target is a service name (auth, tweets, social-graph, timeline, messaging, notifications, media),
            reached at AVIARY_<SERVICE>_ADDRESSES or its default port, or an explicit host:port; or a gateway's
            URL (http:// or https://): the call then goes through the public edge as an app's does, with the
            Swift client library (AviaryClient), signed in first with --login and --password when given.
            Examples: aviary call tweets rpc.discover
                      aviary call http://127.0.0.1:8080 timeline.home '{"limit": 5}' --login alice --password '…'
            """)

    @Argument(help: "A service name, host:port, or a gateway's URL.")
    var target: String

    @Argument(help: "The method, e.g. system.health.")
    var method: String

    @Argument(help: "Params as a JSON object.")
    var params: String = "{}"

    @Option(help: "An access token, sent as _meta.token.")
    var token: String?

    @Option(name: .customLong("service-credential"), help: "The service credential, sent as _meta.service (internal methods).")
    var serviceCredential: String?

    @Option(help: "Time budget in milliseconds.")
    var timeout: Int = 10_000

    @Option(help: "With a gateway's URL: sign in first as this email or username (with --password).")
    var login: String?

    @Option(help: "With --login: the password.")
    var password: String?

    func run() async throws {
        guard let params = try? JSONDecoder().decode(JSONValue.self, from: Data(self.params.utf8)), params.objectValue != nil
        else {
            throw ValidationError("params must be a JSON object, e.g. '{\"userId\": \"1\"}'")
        }
        if target.hasPrefix("http://") || target.hasPrefix("https://") { return try await callThroughGateway(params) }
        guard login == nil, password == nil else {
            throw ValidationError("--login and --password go with a gateway's URL; toward a service, send --token")
        }
        let address = try resolve(target)
        let client = RPCClient(configuration: .init(addresses: [address]), logger: Logger(label: "aviary"))
        defer { Task { await client.shutdown() } }
        let meta = RequestMeta(token: token, service: serviceCredential ?? ProcessInfo.processInfo.environment["AVIARY_SERVICE_SECRET"])
        do {
            let response = try await client.send(
                method, params: try RawJSON(encoding: params), meta: meta, timeout: .milliseconds(timeout))
            let result = try response.result()
            print(try prettyPrinted(result))
        } catch let error as RPCError {
            try fail(error)
        }
    }

    /// The call as an app makes it: through the gateway's WebSocket, signed in when asked.
    private func callThroughGateway(_ params: JSONValue) async throws {
        guard token == nil, serviceCredential == nil else {
            throw ValidationError("through the gateway, sign in with --login and --password; credentials never pass the edge")
        }
        var configuration = AviaryClient.Configuration(gateway: target)
        configuration.callTimeout = .milliseconds(timeout)
        let client = AviaryClient(configuration: configuration, logger: Logger(label: "aviary"))
        do {
            if let login {
                guard let password else { throw ValidationError("--login needs --password") }
                try await client.signIn(login: login, password: password)
            }
            let result = try await client.call(method, params: params, as: RawJSON.self)
            await client.close()
            print(try prettyPrinted(result))
        } catch let error as RPCError {
            await client.close()
            try fail(error)
        }
    }

    private func fail(_ error: RPCError) throws -> Never {
        var text = "error \(error.code): \(error.message)"
        if let data = error.data, let rendered = try? prettyPrinted(RawJSON(encoding: data)) { text += "\n" + rendered }
        FileHandle.standardError.write(Data((text + "\n").utf8))
        throw ExitCode(1)
    }

    private func resolve(_ target: String) throws -> String {
        if target.contains(":") { return target }
        guard let service = ServiceName(rawValue: target) else {
            let names = ServiceName.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("unknown service '\(target)'; use one of \(names), or host:port")
        }
        let configuration = try ServiceConfiguration.load(service: service)
        return configuration.addresses(of: service).first ?? "127.0.0.1:\(service.defaultRPCPort)"
    }

    private func prettyPrinted(_ json: RawJSON) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(json.bytes), options: [.fragmentsAllowed])
        let data = try JSONSerialization.data(
            withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }
}
