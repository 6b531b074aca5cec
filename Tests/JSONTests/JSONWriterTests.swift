import AviaryJSON
import Foundation
import Testing

@Suite("Writing JSON member by member")
struct JSONWriterTests {
    @Test func writesMembersInOrderWithTheirCommas() {
        let json = RawJSON.object { object in
            object.member("id", "1")
            object.member("missing", nil as String?)
            object.null("absent")
            object.member("counts", array: [0, 7, -12, Int64.max, Int64.min]) { list, count in list.int(count) }
            object.member("empty", object: { _ in })
            object.member("none", array: [Int]()) { list, count in list.int(count) }
            object.member("nested", object: { inner in
                inner.member("yes", true)
                inner.member("ratio", 0.5)
                inner.member("infinite", Double.infinity)
                inner.member("tree", ["a": [1, "b"]] as JSONValue)
            })
            object.key("raw")
            object.raw(RawJSON(unchecked: Array("[1,2]".utf8)))
            object.member("text", "line\nbreak \"quoted\" \\ é")
        }
        #expect(
            String(decoding: json.bytes, as: UTF8.self)
                == #"{"id":"1","missing":null,"absent":null,"counts":[0,7,-12,9223372036854775807,-9223372036854775808],"empty":{},"none":[],"#
                + #""nested":{"yes":true,"ratio":0.5,"infinite":null,"tree":{"a":[1,"b"]}},"raw":[1,2],"#
                + #""text":"line\nbreak \"quoted\" \\ é"}"#)
    }

    @Test func readsBackAsWhatWasWritten() throws {
        let texts = ["", "a", "\u{0}\u{1F}\u{7F}", "emoji 🐦 and ü", #"\"#]
        let json = RawJSON.array(texts.map { text in RawJSON { $0.string(text) } })
        #expect(try json.decode([String].self) == texts)
        #expect(String(decoding: RawJSON.array([]).bytes, as: UTF8.self) == "[]")
    }
}
