import AviaryJSON
import Testing

@Suite("Splicing encoded JSON")
struct JSONSpliceTests {
    @Test func splitsAnArrayIntoItsElements() throws {
        let bytes = Array(#" [ {"id":"1","text":"a, [b]"} , "x\"]" ,3,[4,5] ] "#.utf8)
        let elements = try #require(JSONSplice.elements(of: bytes)).map { String(decoding: bytes[$0], as: UTF8.self) }
        #expect(elements == [#"{"id":"1","text":"a, [b]"}"#, #""x\"]""#, "3", "[4,5]"])
        #expect(JSONSplice.elements(of: Array("[]".utf8)) == [])
        #expect(JSONSplice.elements(of: Array(#"{"a":1}"#.utf8)) == nil)
    }

    /// Strings are passed over a word at a time: an escaped quote or backslash, or a bracket or a
    /// comma inside a string, at any place around those words, still splits right.
    @Test func splitsRightWhateverStandsWhereInItsStrings() throws {
        for special in [#"\""#, #"\\"#, #"\u0022"#, "]", ",", "}", "é"] {
            for length in [7, 8, 9, 16, 17] {
                let elements = (0...length).map { place -> String in
                    let plain = String(repeating: "a", count: length)
                    return #"{"t":""# + plain.prefix(place) + special + plain.dropFirst(place) + #""}"#
                }
                let bytes = Array(("[" + elements.joined(separator: ",") + "]").utf8)
                let split = try #require(JSONSplice.elements(of: bytes)).map { String(decoding: bytes[$0], as: UTF8.self) }
                #expect(split == elements, "\(special) in strings of \(length)")
            }
        }
    }

    @Test func readsATopLevelStringMember() {
        let tweet = Array(#"{"author":{"id":"9"},"text":"say \"hi\"","id":"42"}"#.utf8)
        #expect(JSONSplice.stringMember("id", of: tweet[...]) == "42")
        #expect(JSONSplice.stringMember("text", of: tweet[...]) == #"say "hi""#)
        #expect(JSONSplice.stringMember("author", of: tweet[...]) == nil)
        #expect(JSONSplice.stringMember("missing", of: tweet[...]) == nil)
        #expect(JSONSplice.stringMember("id", of: Array(#"{"id":"1""#.utf8)[...]) == nil)
    }
}
