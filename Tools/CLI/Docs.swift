import ArgumentParser
import AviaryJSON
import Foundation
import NIOCore
import NIOHTTP1
import RPC

/// `aviary docs`: writes the API reference (`docs/api.md`) from a running gateway's description.
struct Docs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the API reference (docs/api.md) from a running gateway's GET /rpc/discover.",
        discussion: """
            Run it from the repository's root against a stack with the default settings (limits that \
            summaries quote, such as the tweet length, are the running ones). The suite's \
            ContractTests renders the same from a default stack and fails when docs/api.md differs; \
            it leaves its rendering in .build/api.md.
            """)

    @Option(help: "The gateway's public URL.")
    var gateway = "http://127.0.0.1:8080"

    @Option(help: "Where the reference is written.")
    var output = "docs/api.md"

    func run() async throws {
        guard let url = URLComponents(string: gateway), let host = url.host else {
            throw ValidationError("--gateway must be a URL such as http://127.0.0.1:8080")
        }
        let http = BenchHTTP(host: host, port: url.port ?? 80)
        let reply = try await http.request(.GET, "/rpc/discover")
        await http.close()
        guard reply.status == 200 else { throw ValidationError("GET /rpc/discover answered \(reply.status)") }
        let document = try JSONDecoder().decode(JSONValue.self, from: Data(reply.body.readableBytesView))
        try APIReference.markdown(of: document).write(toFile: output, atomically: true, encoding: .utf8)
        print("wrote \(output): \(document["methods"]?.arrayValue?.count ?? 0) methods")
    }
}
