import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RPC
import TestSupport
import Testing

/// `docs/api.md` is what the code describes: the reference rendered from a default-configured
/// stack's `GET /rpc/discover` must equal the committed file.
@Suite struct APIReferenceTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func theCommittedReferenceIsCurrent() async throws {
        let stack = try await ServiceStack.start(ServiceStack.allServices + ["gateway"], redisDatabase: 4)
        let (body, _) = try await URLSession.shared.data(from: URL(string: stack.gatewayURL() + "/rpc/discover")!)
        let document = try JSONDecoder().decode(JSONValue.self, from: body)
        #expect((document["methods"]?.arrayValue?.count ?? 0) > 40)
        let rendered = APIReference.markdown(of: document)
        let committed = try? String(contentsOf: Self.repository.appendingPathComponent("docs/api.md"), encoding: .utf8)
        if committed != rendered {
            let fresh = Self.repository.appendingPathComponent(".build/api.md")
            try rendered.write(to: fresh, atomically: true, encoding: .utf8)
            Issue.record("docs/api.md is not what the services describe: review and copy \(fresh.path) over it")
        }
    }
}
