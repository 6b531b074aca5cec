import AviaryJSON
import Foundation
import Testing

/// The examples section of the JSON-RPC 2.0 specification, driven through the router without a socket.
/// Positional params are the one deliberate difference: the contract rejects them with -32602.
@Suite struct SpecExampleTests {
    let router = makeTestRouter()

    @Test func positionalParamsAreRejected() async {
        let response = json(await router.answer(#"{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}"#))
        #expect(response?["error"]?["code"] == -32602)
        #expect(response?["id"] == 1)
    }

    @Test func namedParams() async {
        let first = json(await router.answer(#"{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#))
        #expect(first == ["jsonrpc": "2.0", "result": 19, "id": 3])
        let second = json(await router.answer(#"{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}"#))
        #expect(second == ["jsonrpc": "2.0", "result": 19, "id": 4])
    }

    @Test func notificationsGetNoResponse() async {
        #expect(await router.answer(#"{"jsonrpc": "2.0", "method": "update", "params": {"values": [1,2,3,4,5]}}"#) == nil)
        #expect(await router.answer(#"{"jsonrpc": "2.0", "method": "foobar"}"#) == nil)
    }

    @Test func methodNotFound() async {
        let response = json(await router.answer(#"{"jsonrpc": "2.0", "method": "foobar", "id": "1"}"#))
        #expect(response?["error"]?["code"] == -32601)
        #expect(response?["id"] == "1")
    }

    @Test func invalidJSON() async {
        let response = json(await router.answer(#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#))
        #expect(response?["error"]?["code"] == -32700)
        #expect(response?["id"] == .null)
    }

    @Test func invalidRequestObject() async {
        let response = json(await router.answer(#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#))
        #expect(response?["error"]?["code"] == -32600)
        #expect(response?["id"] == .null)
    }

    @Test func batchWithInvalidJSON() async {
        let response = json(await router.answer(#"[ {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"}, {"jsonrpc": "2.0", "method" ]"#))
        #expect(response?["error"]?["code"] == -32700)
        #expect(response?["id"] == .null)
    }

    @Test func emptyBatch() async {
        let response = json(await router.answer("[]"))
        #expect(response?["error"]?["code"] == -32600)
        #expect(response?["id"] == .null)
    }

    @Test func invalidNonEmptyBatches() async {
        let one = json(await router.answer("[1]"))?.arrayValue
        #expect(one?.count == 1)
        #expect(one?.first?["error"]?["code"] == -32600)
        let three = json(await router.answer("[1,2,3]"))?.arrayValue
        #expect(three?.count == 3)
        #expect(three?.allSatisfy { $0["error"]?["code"] == -32600 && $0["id"] == .null } == true)
    }

    @Test func mixedBatch() async throws {
        let frame = """
            [
                {"jsonrpc": "2.0", "method": "sum", "params": {"values": [1,2,4]}, "id": "1"},
                {"jsonrpc": "2.0", "method": "notify_hello", "params": {"values": [7]}},
                {"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": "2"},
                {"foo": "boo"},
                {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
                {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
            ]
            """
        let responses = try #require(json(await router.answer(frame))?.arrayValue)
        #expect(responses.count == 5)
        let byID = Dictionary(responses.map { ($0["id"]?.stringValue ?? "null", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byID["1"]?["result"] == 7)
        #expect(byID["2"]?["result"] == 19)
        #expect(byID["null"]?["error"]?["code"] == -32600)
        #expect(byID["5"]?["error"]?["code"] == -32601)
        #expect(byID["9"]?["result"] == ["hello", 5])
    }

    @Test func batchOfNotificationsGetsNothing() async {
        let frame = #"[{"jsonrpc": "2.0", "method": "notify_sum", "params": {"values": [1,2,4]}}, {"jsonrpc": "2.0", "method": "notify_hello", "params": {"values": [7]}}]"#
        #expect(await router.answer(frame) == nil)
    }
}
