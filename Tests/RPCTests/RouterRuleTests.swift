import AviaryJSON
import Foundation
import Locking
import Logging
import RPC
import Testing

/// The contract's rules on top of JSON-RPC: params validation, `_meta`, access, deadlines, error hygiene.
@Suite struct RouterRuleTests {
    let router = makeTestRouter()

    @Test func wrongTypeNamesTheParameter() async {
        let response = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"subtract","params":{"minuend":"42","subtrahend":1}}"#))
        #expect(response?["error"]?["code"] == -32602)
        #expect(response?["error"]?["data"]?["field"] == "minuend")
        #expect(response?["error"]?["message"]?.stringValue?.contains("minuend") == true)
    }

    @Test func missingParameterIsNamed() async {
        let response = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"subtract","params":{"minuend":42}}"#))
        #expect(response?["error"]?["code"] == -32602)
        #expect(response?["error"]?["message"] == "missing parameter 'subtrahend'")
    }

    @Test func nestedParameterPathIsNamed() async {
        let response = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"sum","params":{"values":[1,"two"]}}"#))
        #expect(response?["error"]?["data"]?["field"] == "values[1]")
    }

    @Test func anUnknownEnumCaseListsTheCases() async {
        let response = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"say","params":{"tone":"whisper"}}"#))
        #expect(response?["error"]?["code"] == -32602)
        #expect(response?["error"]?["data"]?["field"] == "tone")
        #expect(response?["error"]?["message"] == "parameter 'tone' is invalid: it must be one of plain, loud, not 'whisper'")
        let known = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"say","params":{"tone":"loud"}}"#))
        #expect(known?["result"] == "loud")
    }

    @Test func nonObjectParamsAreInvalid() async {
        let response = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"sum","params":5}"#))
        #expect(response?["error"]?["code"] == -32600)
        #expect(response?["id"] == 1)
        // Without an id it is still no notification (not a valid request at all): it is answered, id null.
        let unnamed = json(await router.answer(#"{"jsonrpc":"2.0","method":"sum","params":"x"}"#))
        #expect(unnamed?["error"]?["code"] == -32600)
        #expect(unnamed?["id"] == .null)
        #expect(unnamed?["error"]?["message"]?.stringValue?.contains("'params' must be an object") == true)
    }

    @Test func eachRequestOfABatchIsAnsweredAsIfAlone() async throws {
        // 1e400 is valid JSON that no Swift number holds: only the request carrying it fails.
        let alone = try #require(json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"sum","params":{"values":[1e400]}}"#)))
        #expect(alone["error"]?["code"] == -32602)
        let frame = #"[{"jsonrpc":"2.0","id":1,"method":"sum","params":{"values":[1e400]}}, {"jsonrpc":"2.0","id":2,"method":"sum","params":{"values":[1,2]}}]"#
        let responses = try #require(json(await router.answer(frame))?.arrayValue)
        #expect(responses.count == 2)
        #expect(responses.first == alone)
        #expect(responses.last?["result"] == 3)
    }

    @Test func batchesHoldAtMostTheirLimitOfRequests() async {
        func batch(_ count: Int) -> String {
            "[" + (0..<count).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"get_data"}"# }.joined(separator: ",") + "]"
        }
        let limit = RPCRouter.maxBatchLength
        #expect(json(await router.answer(batch(limit)))?.arrayValue?.count == limit)
        let over = json(await router.answer(batch(limit + 1)))
        #expect(over?["id"] == .null)
        #expect(over?["error"]?["code"] == -32600)
        #expect(over?["error"]?["message"]?.stringValue == "a batch holds at most \(limit) requests; this one has \(limit + 1)")
    }

    @Test func idsAreEchoedExactly() async {
        #expect(json(await router.answer(#"{"jsonrpc":"2.0","id":"abc","method":"get_data"}"#))?["id"] == "abc")
        #expect(json(await router.answer(#"{"jsonrpc":"2.0","id":9007199254740993,"method":"get_data"}"#))?["id"] == .int(9_007_199_254_740_993))
        #expect(json(await router.answer(#"{"jsonrpc":"2.0","id":null,"method":"get_data"}"#))?["id"] == .null)
        #expect(json(await router.answer(#"{"jsonrpc":"2.0","id":{"a":1},"method":"get_data"}"#))?["error"]?["code"] == -32600)
    }

    @Test func wrongVersionIsInvalid() async {
        #expect(json(await router.answer(#"{"jsonrpc":"1.0","id":1,"method":"get_data"}"#))?["error"]?["code"] == -32600)
        #expect(json(await router.answer(#"{"id":1,"method":"get_data"}"#))?["error"]?["code"] == -32600)
    }

    @Test func invalidUTF8IsAParseError() async {
        var frame = Array(#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"value":""#.utf8)
        frame += [0xC3, 0x28, 0xFF]
        frame += Array(#""}}"#.utf8)
        let response = await router.respond(to: Data(frame)).flatMap { json(String(decoding: $0, as: UTF8.self)) }
        #expect(response?["error"]?["code"] == -32700)
    }

    @Test func aLoneSurrogateNamesTheParameter() async {
        let response = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"value":"\ud800 lone"}}"#))
        #expect(response?["error"]?["code"] == -32602)
        #expect(response?["error"]?["data"]?["field"] == "value")
        #expect(response?["error"]?["message"]?.stringValue?.hasPrefix("parameter 'value' is invalid: it escapes a lone surrogate") == true)
    }

    /// A key given twice is refused, never read as one reader or another would: in the params
    /// (with the field named, the key written plainly or escaped) and in the request itself (a
    /// method, an id or params given twice, which an edge and a service could read apart).
    @Test func aKeyGivenTwiceIsRefused() async {
        let params = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"subtract","params":{"minuend":5,"subtrahend":1,"minuend":9}}"#))
        #expect(params?["error"]?["code"] == -32602)
        #expect(params?["error"]?["data"]?["field"] == "minuend")
        #expect(params?["error"]?["message"]?.stringValue == "parameter 'minuend' is invalid: \(WireDecoding.keyGivenTwice)")
        let escaped = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"sum","params":{"values":[1],"v\u0061lues":[2]}}"#))
        #expect(escaped?["error"]?["data"]?["field"] == "values")
        let nested = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"value":"a","_meta":{"token":"x","token":"y"}}}"#))
        #expect(nested?["error"]?["data"]?["field"] == "_meta.token")
        for (frame, member) in [
            (#"{"jsonrpc":"2.0","id":1,"method":"get_data","method":"subtract"}"#, "method"),
            (#"{"jsonrpc":"2.0","id":1,"method":"sum","params":{"values":[1]},"params":{"values":[2]}}"#, "params"),
            (#"{"jsonrpc":"2.0","id":1,"id":2,"method":"get_data"}"#, "id"),
            (#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"get_data"}"#, "jsonrpc"),
        ] {
            let response = json(await router.answer(frame))
            #expect(response?["error"]?["code"] == -32600, "\(frame)")
            #expect(response?["error"]?["message"]?.stringValue == "invalid request: '\(member)' is given twice")
        }
    }

    @Test func deepNestingIsRefusedCleanly() async {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let response = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"value":\#(deep)}}"#))
        #expect(response?["error"]?["code"] == -32700)
        #expect(response?["error"]?["message"]?.stringValue?.contains("deeper than 512 levels") == true)
        // At the limit it is still read: the envelope and params take two levels.
        let deepest = String(repeating: "[", count: 510) + String(repeating: "]", count: 510)
        let echoed = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"value":\#(deepest)}}"#))
        #expect(echoed?["result"] != nil)
    }

    /// The envelope is read by a byte scanner, not a decoder: it must still read every spelling
    /// JSON allows and refuse every frame JSON does not.
    @Test func escapedAndSpacedEnvelopesAreRead() async {
        let escaped = json(await router.answer(
            #" { "jsonrpc" : "2.0" , "i\u0064" : "\u00e9\ud83d\udc26" , "met\u0068od" : "echo" , "params" : { "value" : [ 1 , { } ] } } "#))
        #expect(escaped?["id"] == "é🐦")
        #expect(escaped?["result"] == [1, [:]])
        let numbers = json(await router.answer(#"{"jsonrpc":"2.0","id":-1.5e2,"method":"subtract","params":{"minuend":-0,"subtrahend":2}}"#))
        #expect(numbers?["id"]?.intValue == -150)
        #expect(numbers?["result"] == -2)
        let meta = json(await router.answer(
            #"{"jsonrpc":"2.0","id":1,"method":"meta","params":{"_meta":{"timeoutMs":"soon","token":7,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}"#))
        #expect(meta?["result"]?["timeoutMs"] == nil)
        #expect(meta?["result"]?["traceparent"] == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    }

    @Test func framesThatAreNotJSONAreParseErrors() async {
        let frames = [
            #"{"jsonrpc":"2.0","id":1,"method":"get_data"} x"#, #"{"jsonrpc":"2.0","id":01,"method":"get_data"}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"get_data",}"#, #"{"jsonrpc":"2.0","id":1,"method":"get_data","params":{"a":tru}}"#,
            #"{"jsonrpc":"2.0","id":1,"method":"get\x"}"#, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"get\tdata\"}",
            #"{"jsonrpc":"2.0","id":1,"method":"get_data","params":{"a":[1,]}}"#, #"{"jsonrpc":"2.0","id":1,"method""#,
            #"{"jsonrpc":"2.0","id":1.,"method":"get_data"}"#, #"{"jsonrpc":"2.0","id":"\u12"}"#,
        ]
        for frame in frames {
            #expect(json(await router.answer(frame))?["error"]?["code"] == -32700, "\(frame)")
        }
        #expect(json(await router.answer(#"[1,"#))?["error"]?["code"] == -32700)
        #expect(json(await router.answer(#""a request""#))?["error"]?["code"] == -32600)
        #expect(json(await router.answer(#"{"jsonrpc":"2.0","id":true,"method":"get_data"}"#))?["error"]?["code"] == -32600)
    }

    @Test func hostileStringsRoundTrip() async {
        let hostile = "'; DROP TABLE users; -- \u{202E}gnp.exe 🐦 \\\"\n\t\u{0}"
        let frame = try! JSONEncoder().encode(["jsonrpc": JSONValue("2.0"), "id": 1, "method": "echo", "params": ["value": .string(hostile)]])
        let response = await router.respond(to: frame).flatMap { try? JSONDecoder().decode(JSONValue.self, from: $0) }
        #expect(response?["result"] == .string(hostile))
    }

    @Test func userMethodsNeedAValidToken() async {
        let none = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"whoami"}"#))
        #expect(none?["error"]?["code"] == -32001)
        #expect(none?["error"]?["data"]?["reason"] == "unauthenticated")
        let bad = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"whoami","params":{"_meta":{"token":"forged"}}}"#))
        #expect(bad?["error"]?["code"] == -32001)
        let good = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"whoami","params":{"_meta":{"token":"good-token"}}}"#))
        #expect(good?["result"]?["userID"] == 42)
    }

    @Test func anonymousMethodsTakeABadTokenForNoneAndTellAnUncheckedOne() async {
        func answer(token: String) async -> JSONValue? {
            json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"whoever","params":{"_meta":{"token":"\#(token)"}}}"#))
        }
        #expect(await answer(token: "good-token")?["result"] == 42)
        #expect(await answer(token: "forged")?["result"] == 0)
        // Served as anonymous, but told: answered as to a stranger, a member's own private medium
        // would read as not found.
        #expect(await answer(token: "outage")?["result"] == -1)
    }

    @Test func internalMethodsNeedTheServiceCredential() async {
        let none = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"secret"}"#))
        #expect(none?["error"]?["code"] == -32003)
        let userToken = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"secret","params":{"_meta":{"token":"good-token"}}}"#))
        #expect(userToken?["error"]?["code"] == -32003)
        let wrong = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"secret","params":{"_meta":{"service":"guess"}}}"#))
        #expect(wrong?["error"]?["code"] == -32003)
        let right = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"secret","params":{"_meta":{"service":"sesame"}}}"#))
        #expect(right?["result"] == "classified")
    }

    @Test func metaIsReadAndNotPassedAsParams() async {
        let response = json(await router.answer(
            #"{"jsonrpc":"2.0","id":1,"method":"meta","params":{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","timeoutMs":5000}}}"#))
        #expect(response?["result"]?["traceparent"] == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        #expect(response?["result"]?["timeoutMs"] == 5000)
    }

    /// A call without a trace starts one, so its log lines and downstream calls share a trace id;
    /// each downstream call is a new span of the caller's trace.
    @Test func everyCallHasATraceThatTravelsDownstream() async throws {
        let started = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"meta"}"#))
        let parts = try #require(started?["result"]?["traceparent"]?.stringValue).split(separator: "-")
        #expect(parts.count == 4 && parts[0] == "00" && parts[1].count == 32 && parts[2].count == 16)
        let given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let downstream = json(await router.answer(
            #"{"jsonrpc":"2.0","id":1,"method":"downstreamMeta","params":{"_meta":{"traceparent":"\#(given)"}}}"#))
        let child = try #require(downstream?["result"]?["traceparent"]?.stringValue)
        #expect(child.hasPrefix("00-0af7651916cd43dd8448eb211c80319c-"))
        #expect(child != given)
        let childParts = child.split(separator: "-")
        #expect(childParts.count == 4 && childParts[2].count == 16 && childParts[3] == "01")
        #expect(childParts[2].allSatisfy { $0.isHexDigit && !$0.isUppercase })
    }

    /// What a handler logs names its method and its call's trace, whichever method ran before.
    @Test func handlersLogTheirMethodAndTrace() async throws {
        let logged = LoggedLines()
        var router = RPCRouter(service: "test", version: "1", logger: Logger(label: "test") { _ in MetadataCapture(sink: logged) })
        for name in ["first", "second"] {
            router.register(name, summary: "Logs a line.", access: .anonymous) { (_: Empty, context) in
                context.logger.info("handled")
                return Empty()
            }
        }
        let trace = "0af7651916cd43dd8448eb211c80319c"
        _ = await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"first","params":{"_meta":{"traceparent":"00-\#(trace)-b7ad6b7169203331-01"}}}"#)
        _ = await router.answer(#"{"jsonrpc":"2.0","id":2,"method":"second"}"#)
        _ = await router.answer(#"{"jsonrpc":"2.0","id":3,"method":"first"}"#)
        let lines = logged.lines.withLock { $0 }
        #expect(lines.map { $0["rpc.method"]?.description } == ["first", "second", "first"])
        #expect(lines.first?["trace_id"]?.description == trace)
        let started = lines.dropFirst().compactMap { $0["trace_id"]?.description }
        #expect(started.count == 2 && Set(started).count == 2 && !started.contains(trace))
    }

    /// Only a well-formed traceparent gives its trace id; anything else makes a call start a trace.
    @Test func traceIDsComeOnlyFromWellFormedTraceparents() {
        let id = "0af7651916cd43dd8448eb211c80319c"
        #expect(RequestMeta(traceparent: "00-\(id)-b7ad6b7169203331-01").traceID == id)
        let notHex = [
            "00-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-b7ad6b7169203331-01", "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd\n448eb211c80319c-b7ad6b7169203331-01", "00-00000000000000000000000000000000-b7ad6b7169203331-01",
        ]
        for malformed in ["", "garbage", "00-\(id)", "00-\(id)-b7ad6b7169203331", "00-\(id)-b7-01-extra", "-\(id)-b7-01", "00-abc-b7-01"] + notHex {
            #expect(RequestMeta(traceparent: malformed).traceID == nil, "\(malformed)")
            let started = RequestMeta(traceparent: malformed).continuingTrace()
            #expect(started.traceID?.utf8.count == 32, "\(malformed)")
        }
    }

    @Test func deadlinesAreHonoured() async {
        let spent = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"sleep","params":{"milliseconds":1,"_meta":{"timeoutMs":0}}}"#))
        #expect(spent?["error"]?["code"] == -32051)
        let inBudget = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"sleep","params":{"milliseconds":5,"_meta":{"timeoutMs":5000}}}"#))
        #expect(inBudget?["result"] == 5)
    }

    @Test func unexpectedErrorsAreGeneric() async {
        let response = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"fail"}"#))
        #expect(response?["error"] == ["code": -32603, "message": "internal error"])
    }

    @Test func discoverDescribesEveryMethod() async throws {
        let document = try #require(json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}"#))?["result"])
        #expect(document["openrpc"]?.stringValue?.hasPrefix("1.") == true)
        let methods = try #require(document["methods"]?.arrayValue)
        let names = Set(methods.compactMap { $0["name"]?.stringValue })
        #expect(names.isSuperset(of: ["rpc.discover", "subtract", "sum", "echo", "whoami", "secret"]))
        let subtract = try #require(methods.first { $0["name"] == "subtract" })
        let params = try #require(subtract["params"]?.arrayValue)
        #expect(params.map { $0["name"] } == ["minuend", "subtrahend"])
        #expect(params.allSatisfy { $0["required"] == true && $0["schema"]?["type"] == "integer" })
        let sum = try #require(methods.first { $0["name"] == "sum" })
        #expect(sum["params"]?.arrayValue?.first?["schema"] == ["type": "array", "items": ["type": "integer"]])
    }

    /// A handler that splices pre-encoded JSON still documents its result's shape.
    @Test func splicedResultsAreDescribedByTheirShape() async throws {
        var router = RPCRouter(service: "test", version: "1.0.0", logger: Logger(label: "test"))
        router.register("spliced", summary: "A pre-encoded answer.", access: .anonymous, resultShape: SubtractParams.self) {
            (_: Empty, _) in RawJSON(unchecked: Array(#"{"minuend":3,"subtrahend":1}"#.utf8))
        }
        let answer = json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"spliced"}"#))
        #expect(answer?["result"] == ["minuend": 3, "subtrahend": 1])
        let document = try #require(json(await router.answer(#"{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}"#))?["result"])
        let method = try #require(document["methods"]?.arrayValue?.first { $0["name"] == "spliced" })
        #expect(method["result"]?["schema"]?["properties"]?["minuend"]?["type"] == "integer")
    }
}

/// Schemas of params that validate while decoding (ids, limits) and have optional primitives.
private struct PagedParams: Codable, Sendable {
    var userID: SampleID
    var limit: Int?
    var cursor: String?
}

private struct SampleID: Codable, Sendable, JSONSchemaDescribing {
    var value: String
    static var jsonSchema: JSONValue { ["type": "string", "pattern": "^[0-9]+$"] }
    init(from decoder: any Decoder) throws {
        value = try decoder.singleValueContainer().decode(String.self)
        guard !value.isEmpty, value.allSatisfy(\.isNumber) else { throw RPCError.validation("not an id", field: "userID") }
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

@Test func schemaInferenceSeesValidatingTypesAndOptionalPrimitives() {
    let schema = JSONSchema.of(PagedParams.self)
    #expect(schema["properties"]?["userID"] == ["type": "string", "pattern": "^[0-9]+$"])
    #expect(schema["properties"]?["limit"] == ["type": "integer"])
    #expect(schema["properties"]?["cursor"] == ["type": "string"])
    #expect(schema["required"] == ["userID"])
}

/// The metadata of every line logged through a ``MetadataCapture``.
private final class LoggedLines: Sendable {
    let lines = Locked<[Logger.Metadata]>([])
}

/// Keeps the metadata of every line logged through it.
private struct MetadataCapture: LogHandler {
    let sink: LoggedLines
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        sink.lines.withLock { $0.append(metadata.merging(event.metadata ?? [:]) { _, new in new }) }
    }
}
