import AuthTokens
import AviaryAPI
import AviaryJSON
import Foundation
import RPC
import TestSupport
import Testing

@Suite("who may call what")
struct AccessTests {
    static let internalMethods = ["graph.followerIds", "graph.followingIds", "graph.statsMany", "graph.relationships"]

    func internalParams(_ user: GraphStack.TestUser) -> [String: JSONValue] {
        ["userId": .id(user.id), "viewerId": .id(user.id), "ids": .ids([user.id])]
    }

    @Test("internal methods refuse calls without the service credential, with a wrong one, and with a user token")
    func internalMethodsNeedTheCredential() async throws {
        let stack = try await GraphStack.shared()
        let kim = try await stack.makeUser("kim")
        let params = internalParams(kim)
        for method in Self.internalMethods {
            let metas = [
                RequestMeta(), RequestMeta(service: "not-the-credential"), RequestMeta(token: kim.token),
                RequestMeta(token: kim.token, service: String(stack.serviceCredential.dropLast())),
            ]
            for meta in metas {
                let error = await rpcError {
                    _ = try await stack.client.call(method, params: params, meta: meta, as: JSONValue.self)
                }
                #expect(error?.code == -32003, "\(method) with \(meta)")
                #expect(error?.reason == "forbidden", "\(method) with \(meta)")
            }
            _ = try await stack.callInternal(method, params, decoding: JSONValue.self)
        }
    }

    @Test("user methods refuse calls without a token, with a forged one and with one for another key")
    func userMethodsNeedAToken() async throws {
        let stack = try await GraphStack.shared()
        let (lee, max) = (try await stack.makeUser("lee"), try await stack.makeUser("max"))
        let forged = String(lee.token.dropLast(3)) + (lee.token.hasSuffix("AAA") ? "BBB" : "AAA")
        let otherKey = try TokenKeys(signingSeed: (0..<32).map { _ in UInt8.random(in: 0...255) })
        let issuer = try await AccessTokenIssuer(keys: otherKey)
        let foreign = try await issuer.issue(userID: lee.id.value, sessionID: 1).token
        for method in ["graph.follow", "graph.unfollow", "graph.relationship", "graph.suggestions"] {
            for token in [nil, forged, foreign, "", "not.a.token"] {
                let error = await rpcError {
                    _ = try await stack.client.call(
                        method, params: ["userId": JSONValue.id(max.id)], meta: RequestMeta(token: token), as: JSONValue.self)
                }
                #expect(error?.code == -32001, "\(method) with \(token ?? "no token")")
            }
        }
        #expect(try await stack.storedCounts(max.id) == nil)
        // The service credential is not a user: it cannot follow.
        let asService = await rpcError {
            _ = try await stack.client.call(
                "graph.follow", params: ["userId": JSONValue.id(max.id)], meta: RequestMeta(service: stack.serviceCredential),
                as: JSONValue.self)
        }
        #expect(asService?.code == -32001)
    }

    @Test("rpc.discover lists every method with its description")
    func discover() async throws {
        let stack = try await GraphStack.shared()
        let document = try await stack.call("rpc.discover", decoding: JSONValue.self)
        let methods = document["methods"]?.arrayValue ?? []
        let names = Set(methods.compactMap { $0["name"]?.stringValue })
        let expected: Set = [
            "graph.follow", "graph.unfollow", "graph.followers", "graph.following", "graph.relationship", "graph.stats",
            "graph.suggestions", "graph.followerIds", "graph.followingIds", "graph.statsMany", "graph.relationships",
        ]
        #expect(expected.isSubset(of: names))
        for method in methods where expected.contains(method["name"]?.stringValue ?? "") {
            #expect((method["summary"]?.stringValue ?? "").count > 20)
        }
    }
}
