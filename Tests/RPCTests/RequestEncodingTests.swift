import AviaryJSON
import Foundation
import Testing

@testable import RPC

@Suite("Encoding requests")
struct RequestEncodingTests {
    /// Strings a token, a credential or a method name could carry, well-formed or hostile.
    static let texts = [
        "plain", "", #"quote " and backslash \ and slash /"#, "line\nbreak\r\ttab", "\u{0}\u{1}\u{1F}\u{7F}",
        "é ü 中文 😀", "\u{202E}rtl", "'; DROP TABLE users; --", String(repeating: "x", count: 300),
    ]

    /// The method and `_meta` written by hand read back as they were, through the server's own
    /// reader and through Foundation's.
    @Test(arguments: texts)
    func methodAndMetaReadBackIntact(text: String) throws {
        let meta = RequestMeta(token: text, service: text, traceparent: text, timeoutMs: 1500)
        let frame = try RequestEncoding.request(id: 7, method: text, params: RawJSON(unchecked: Array(#"{"a":1}"#.utf8)), meta: meta)
        #expect(frame.last == UInt8(ascii: "\n"))
        let body = Data(frame.dropLast())
        let header = try RequestHeader.decode(body)
        #expect(header.method == text)
        #expect(header.meta == meta)
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        let params = try #require(object["params"] as? [String: Any])
        #expect(params["a"] as? Int == 1)
        #expect((params["_meta"] as? [String: Any])?["token"] as? String == text)
    }

    @Test func metaHoldsOnlyTheMembersSet() throws {
        let cases: [(RequestMeta, String)] = [
            (RequestMeta(token: "t"), #"{"_meta":{"token":"t"}}"#),
            (RequestMeta(timeoutMs: 5), #"{"_meta":{"timeoutMs":5}}"#),
            (RequestMeta(service: "s", traceparent: "p"), #"{"_meta":{"service":"s","traceparent":"p"}}"#),
            (RequestMeta(), #"{}"#),
        ]
        for (meta, expected) in cases {
            let frame = try RequestEncoding.request(id: nil, method: "m", params: RawJSON(unchecked: Array("{}".utf8)), meta: meta)
            let text = String(decoding: frame, as: UTF8.self)
            #expect(text == #"{"jsonrpc":"2.0","method":"m","params":"# + expected + "}\n")
        }
    }
}
