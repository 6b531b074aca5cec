import Foundation
import Testing

@testable import AviaryJSON

@Suite("Decoding JSON off the wire")
struct WireDecodingTests {
    struct Inner: Codable, Equatable, Sendable {
        var name: String
        var tags: [String]?
    }

    /// Params shaped like the services' own: nested objects, optionals, arrays of strings and numbers.
    struct Params: Codable, Equatable, Sendable {
        var ids: [String]
        var limit: Int?
        var cursor: String?
        var flag: Bool?
        var score: Double?
        var small: Int8?
        var counts: [Int64]?
        var inner: Inner?
        var items: [Inner]?
        var maybe: [String?]?
    }

    /// A type whose decoding catches a failure and goes on another way, as a wire type may.
    struct Lenient: Decodable, Equatable, Sendable {
        var value: String
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                value = "text:" + text
            } else if let number = try? container.decode(Int.self) {
                value = "int:\(number)"
            } else {
                value = "other"
            }
        }
    }

    struct LenientParams: Decodable, Equatable, Sendable {
        var a: Lenient
    }

    /// What Foundation's decoder makes of `json`: the value or the error, as text.
    private func foundation<T: Decodable>(_ type: T.Type, _ json: String) -> String {
        outcome { try JSONCoding.decoder().decode(type, from: Data(json.utf8)) }
    }

    private func ours<T: Decodable>(_ type: T.Type, _ json: String) -> String {
        outcome { try WireDecoding.decode(type, from: Data(json.utf8)) }
    }

    private func outcome<T>(_ body: () throws -> T) -> String {
        do { return "value: \(try body())" } catch { return "error: \(error)" }
    }

    /// The params the services receive take the fast path and decode as Foundation decodes them.
    @Test(arguments: [
        #"{"ids":["1","22","333"]}"#,
        #"{"ids":[],"limit":20,"cursor":"abc\n\u00e9\ud83d\ude00","flag":true,"score":-1.5e3,"small":-128}"#,
        #"{"ids":["x"],"counts":[0,-9223372036854775808,9223372036854775807],"_meta":{"token":"t","timeoutMs":100}}"#,
        #"{"ids":["x"],"inner":{"name":"n","tags":null},"items":[{"name":"a"},{"name":"b","tags":["c"]}]}"#,
        #" { "ids" : [ "a" , "b" ] , "maybe" : [ null , "m" ] , "limit" : null } "#,
        #"{"ids":["'; DROP TABLE users; --","\u0000","\u202e"],"extra":[1,{"deep":[true]}]}"#,
        #"{"ids":["\ufffd","�"]}"#,  // U+FFFD itself, escaped or not, is no lone surrogate
    ])
    func commonParamsTakeTheFastPathAndMatchFoundation(json: String) throws {
        let fast = try #require(try WireDecoder.decode(Params.self, from: Data(json.utf8)))
        #expect(fast == (try JSONCoding.decoder().decode(Params.self, from: Data(json.utf8))))
    }

    /// Whatever the fast path leaves to Foundation (or gets wrong and gives up on), the caller gets
    /// exactly what Foundation gives: the same value, or the same error.
    @Test(arguments: [
        #"{"ids":"1"}"#,  // a type mismatch
        #"{"limit":1}"#,  // a missing key
        #"{"ids":null}"#,  // null where a value must be
        #"{"ids":[1]}"#,  // a number where a string must be
        #"{"ids":[],"limit":1.0}"#,  // an integer written as a fraction
        #"{"ids":[],"limit":1e2}"#,  // and with an exponent
        #"{"ids":[],"limit":1.5}"#,
        #"{"ids":[],"limit":99999999999999999999}"#,  // overflow
        #"{"ids":[],"small":200}"#,  // overflow of a narrow type
        #"{"ids":[],"score":1e999}"#,
        #"{"ids":[],"inner":{"name":1}}"#,
        #"{"ids":[],"items":[{"name":"a"},{}]}"#,
        #"{"ids":[],"flag":"true"}"#,
        #"{"ids":[]"#,  // malformed
        #"[1]"#,
        #"null"#,
    ])
    func everyOtherCaseIsFoundations(json: String) {
        #expect(ours(Params.self, json) == foundation(Params.self, json))
    }

    /// A type that catches a failure must see the failures Foundation would show it: the fast path
    /// gives up rather than let it take another branch. That holds for the failure to read a string
    /// that escapes a lone surrogate too: with Foundation the type goes on (to "other"), so the fast
    /// path must not refuse the text (found by `JSONFuzz`, Fuzz/Regressions/json).
    @Test(arguments: [
        #"{"a":"s"}"#, #"{"a":7}"#, #"{"a":7.0}"#, #"{"a":true}"#, #"{"a":null}"#, #"{"a":"\udc00"}"#,
        #"{"a":"\uD46D\uDE00"}"#,
    ])
    func aTypeThatRecoversFromAFailureDecodesAsWithFoundation(json: String) {
        #expect(ours(LenientParams.self, json) == foundation(LenientParams.self, json))
    }

    /// The scanner steps over plain string bytes eight at a time: a quote, an escape, a control
    /// character or a non-ASCII character at any place around those words is still seen.
    @Test(arguments: [#"\""#, #"\\"#, #"\n"#, #"\u00e9"#, "é", "😀", "\u{7F}", "\u{1F}", "\"", "\n"])
    func everyByteOfALongStringIsSeen(special: String) {
        for length in [7, 8, 9, 15, 16, 17, 24] {
            for place in 0...length {
                let plain = String(repeating: "a", count: length)
                let text = String(plain.prefix(place)) + special + String(plain.dropFirst(place))
                let json = #"{"ids":[""# + text + #""]}"#
                #expect(ours(Params.self, json) == foundation(Params.self, json), "\(special) at \(place) of \(length)")
            }
        }
    }

    /// Free-form JSON (an event's payload, relayed to every consumer) is built straight from the
    /// scanned tree and equals what Foundation decodes, nested objects and arrays included.
    @Test(arguments: [
        #"{"tweetId":"119630780289495040","authorId":"7","mentionIds":["1","2"],"replyToUserId":null,"likes":0}"#,
        #"{"a":{"b":[1,-9223372036854775808,9223372036854775807,true,false,null,"x\n\u00e9\ud83d\ude00"]},"c":[]}"#,
        #"[{"": {}}, [[]], "", 0]"#,
        #""only text""#,
        #"null"#,
    ])
    func freeFormJSONTakesTheFastPathAndMatchesFoundation(json: String) throws {
        let fast = try #require(try WireDecoder.decode(JSONValue.self, from: Data(json.utf8)))
        #expect(fast == (try JSONCoding.decoder().decode(JSONValue.self, from: Data(json.utf8))))
    }

    /// An object of 100,000 keys (a 1 MiB frame holds that many) decodes through hash tables, not a
    /// comparison of every key with every other: a key given twice among them is still found, and
    /// a field is still found among them.
    @Test func objectsOfManyKeysAreDecodedAndTheirDuplicatesFound() throws {
        let keys = (0..<100_000).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        let many = try #require(try WireDecoder.decode([String: Int].self, from: Data("{\(keys)}".utf8)))
        #expect(many.count == 100_000 && many["k99999"] == 99_999)
        #expect(try WireDecoder.decode([String: Int].self, from: Data("{\(keys),\"k5\":0}".utf8)) == nil)
        let params = try #require(try WireDecoder.decode(Params.self, from: Data("{\(keys),\"ids\":[\"x\"],\"limit\":3}".utf8)))
        #expect(params.ids == ["x"] && params.limit == 3)
    }

    /// Numbers other than plain integers that fit are left to Foundation, as `JSONValue`'s own
    /// decoding through the fast path left them.
    @Test(arguments: [#"{"a":1.5}"#, #"{"a":1.0}"#, #"{"a":1e2}"#, #"[99999999999999999999]"#])
    func freeFormJSONWithOtherNumbersIsFoundations(json: String) throws {
        #expect(try WireDecoder.decode(JSONValue.self, from: Data(json.utf8)) == nil)
        #expect(ours(JSONValue.self, json) == foundation(JSONValue.self, json))
    }

    /// A key given twice in one object is refused with its path, whatever else the text holds
    /// (a number Foundation must read, a key Foundation must compare) and however the key is
    /// written; Foundation's decoder would take one of the two.
    @Test(arguments: [
        (#"{"ids":[],"ids":["dup"]}"#, "ids"),
        (#"{"ids":[],"limit":1,"inner":{"name":"a","n\u0061me":"b"}}"#, "inner/name"),
        (#"{"ids":[],"items":[{"name":"a"},{"name":"b","name":"c"}]}"#, "items/[1]/name"),
        (#"{"ids":[],"score":1.5,"x":{"\u00e9":1,"e\u0301":2}}"#, "x/\u{e9}"),
        (#"{"ids":[],"limit":1,"_meta":{"token":"a","token":"b"}}"#, "_meta/token"),
        (#"{"\ufffd":1,"ids":[],"ids":[]}"#, "ids"),
        (#"[{"a":[{"b":1,"b":1}]}]"#, "[0]/a/[0]/b"),
    ])
    func aKeyGivenTwiceIsRefusedWhereItIs(json: String, path: String) {
        do {
            if json.hasPrefix("[") {
                _ = try WireDecoding.decode(JSONValue.self, from: Data(json.utf8))
            } else {
                _ = try WireDecoding.decode(Params.self, from: Data(json.utf8))
            }
            Issue.record("\(json) was accepted")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.debugDescription == WireDecoding.keyGivenTwice)
            let found = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: "/")
            #expect(found == path)
        } catch {
            Issue.record("\(json): \(error)")
        }
    }

    /// A string that escapes a lone surrogate is no text. Foundation refuses it as "not valid JSON"
    /// without saying where; the fast path names the field that holds it.
    @Test func aLoneSurrogateIsRefusedWhereItIs() {
        func path(_ json: String, _ decode: (Data) throws -> Any) -> String? {
            do {
                _ = try decode(Data(json.utf8))
                return nil
            } catch DecodingError.dataCorrupted(let context) {
                #expect(context.debugDescription.contains("lone surrogate"))
                return context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: "/")
            } catch {
                return "\(error)"
            }
        }
        #expect(path(#"{"ids":[],"cursor":"ab\udc00"}"#) { try WireDecoding.decode(Params.self, from: $0) } == "cursor")
        #expect(path(#"{"ids":["1","\ud83d x"]}"#) { try WireDecoding.decode(Params.self, from: $0) } == "ids/[1]")
        #expect(path(#"{"value":["\ud800"]}"#) { try WireDecoding.decode([String: JSONValue].self, from: $0) } == "value")
        // A pair is one character; a lone surrogate in a member the value does not read is let be,
        // as Foundation lets it be.
        for json in [#"{"ids":["\ud83d\ude00"]}"#, #"{"ids":[],"other":"\ud800"}"#] {
            #expect(ours(Params.self, json) == foundation(Params.self, json))
            #expect(ours(Params.self, json).hasPrefix("value"))
        }
    }

    /// A key that escapes a lone surrogate makes Foundation's decoder refuse the object, where the
    /// scanner reads it as U+FFFD: the fast path leaves any key with U+FFFD to Foundation (found by
    /// `JSONFuzz`, Fuzz/Regressions/json).
    @Test(arguments: [
        #"{"ids":[],"\ud800":1}"#, #"{"ids":[],"inner":{"name":"n","x\udc00":1}}"#, #"{"\ufffd":1,"ids":[]}"#,
        "{\"\u{FFFD}\":1,\"ids\":[]}",
    ])
    func aKeyWithUFFFDIsFoundations(json: String) throws {
        #expect(try WireDecoder.decode(Params.self, from: Data(json.utf8)) == nil)
        #expect(ours(Params.self, json) == foundation(Params.self, json))
        // Compared as values: two dictionaries with the same entries may describe them in another order.
        let data = Data(json.utf8)
        #expect(
            (try? WireDecoding.decode([String: JSONValue].self, from: data))
                == (try? JSONCoding.decoder().decode([String: JSONValue].self, from: data)))
    }

    /// A string that escapes a lone surrogate is a node of its own, with no text: a string of any
    /// text, U+FFFD included, is read on the fast path as the text it is.
    @Test func textWithUFFFDTakesTheFastPath() throws {
        let text = "\u{FFFD}(an escaped lone surrogate)\u{FFFD}"
        var json = Array(#"{"ids":["#.utf8)
        JSONText.appendString(text, to: &json)
        json += Array("]}".utf8)
        #expect(try #require(try WireDecoder.decode(Params.self, from: Data(json))).ids == [text])
        #expect(ours(Params.self, String(decoding: json, as: UTF8.self)) == foundation(Params.self, String(decoding: json, as: UTF8.self)))
    }

    struct Scored: Decodable, Sendable { var score: Double }

    /// Numbers are read once, as the tree holds them: an integer that fits `Int64` as one, any other
    /// number (`-0` too) as a double. A `Double` takes either as Foundation does, sign and rounding
    /// included; an integer type takes the former where it fits and leaves the rest to Foundation.
    @Test(arguments: [
        "0", "-0", "7", "-9223372036854775808", "9223372036854775807", "9007199254740993", "9223372036854775808",
        "18446744073709551615", "18446744073709551616", "-1.5", "0.1", "2.5e-3", "1E+2", "1e308",
    ])
    func numbersAreReadAsFoundationReadsThem(number: String) throws {
        let json = #"{"score":\#(number)}"#
        let fast = try #require(try WireDecoder.decode(Scored.self, from: Data(json.utf8)))
        let slow = try JSONCoding.decoder().decode(Scored.self, from: Data(json.utf8))
        #expect(fast.score.bitPattern == slow.score.bitPattern)
        #expect(ours([String: Int].self, json) == foundation([String: Int].self, json))
        #expect(ours([String: Int8].self, json) == foundation([String: Int8].self, json))
        #expect(ours([String: UInt64].self, json) == foundation([String: UInt64].self, json))
    }

    /// A number that is not zero but rounds to it (`1e-400`) Foundation's decoder refuses, and a
    /// zero written with an exponent it reads or refuses by rules of its own (`0e5` and `0.00e5`
    /// refused, `0e99` and `0.0e5` read): the fast path leaves each such number to it. Found by
    /// `JSONFuzz` (Fuzz/Regressions/json).
    @Test(arguments: [
        "2.5072014e-3000000004", "1e-400", "-1e-400", "2e-324", "0.0000000000000000000000000000000000000000000000001e-300",
        "0e5", "0e1", "0.00e5", "0.000E5", "0.000e9", "0.0e5", "0e99", "0.000e+5", "0.000e-5", "-0.000e5",
    ])
    func zerosWrittenWithAnExponentAreFoundations(number: String) throws {
        let json = #"{"score":\#(number)}"#
        #expect(try WireDecoder.decode(Scored.self, from: Data(json.utf8)) == nil)
        #expect(outcome { try WireDecoding.decode(Scored.self, from: Data(json.utf8)).score.bitPattern }
            == outcome { try JSONCoding.decoder().decode(Scored.self, from: Data(json.utf8)).score.bitPattern })
        #expect(ours([Double].self, "[\(number)]") == foundation([Double].self, "[\(number)]"))
        #expect(ours(JSONValue.self, json) == foundation(JSONValue.self, json))
    }

    /// Zeros written plainly are read on the fast path, as Foundation reads them.
    @Test(arguments: ["0", "-0", "0.0", "-0.000"])
    func plainZerosTakeTheFastPath(number: String) throws {
        let json = #"{"score":\#(number)}"#
        let fast = try #require(try WireDecoder.decode(Scored.self, from: Data(json.utf8)))
        #expect(fast.score.bitPattern == (try JSONCoding.decoder().decode(Scored.self, from: Data(json.utf8))).score.bitPattern)
    }

    struct Dated: Decodable, Equatable, Sendable { var at: Date }

    /// Dates are read as the wire's strategy reads them (RFC 3339); text that is no such time is left
    /// to Foundation, whose error names the field.
    @Test func datesAreReadAsTheWireStrategyReadsThem() throws {
        let json = #"{"at":"2026-11-25T10:00:00.123Z"}"#
        let fast = try #require(try WireDecoder.decode(Dated.self, from: Data(json.utf8)))
        #expect(fast == (try JSONCoding.decoder().decode(Dated.self, from: Data(json.utf8))))
        for bad in [#"{"at":"yesterday"}"#, #"{"at":1764064800}"#, #"{"at":null}"#] {
            #expect(try WireDecoder.decode(Dated.self, from: Data(bad.utf8)) == nil)
            #expect(ours(Dated.self, bad) == foundation(Dated.self, bad))
            #expect(ours(Dated.self, bad).hasPrefix("error"))
        }
    }

    /// Around Foundation's nesting limit the fast path may refuse more, never less.
    @Test(arguments: [509, 510, 511, 512, 513, 600])
    func nestingAtTheLimitIsDecidedAsFoundationDecidesIt(depth: Int) throws {
        let json = "{\"ids\":[],\"x\":" + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"
        #expect(ours(Params.self, json) == foundation(Params.self, json))
        if depth >= 600 { #expect(try WireDecoder.decode(Params.self, from: Data(json.utf8)) == nil) }
    }

    /// `RawJSON.strings(named:)` picks the named string members out of an object, with escapes
    /// resolved, whatever else the object holds, and reads nothing out of text that is not one object.
    @Test func namedStringMembersArePickedOutOfAnObject() {
        let json = #"{"at":"2026-11-26T12:00:00.000Z","followerId":"12","followeeId":"3\u0034","n":5,"list":["x"],"nested":{"followeeId":"9"}}"#
        let picked = RawJSON(unchecked: Array(json.utf8)).strings(named: ["followerId", "followeeId", "n", "absent"])
        #expect(picked == ["followerId": "12", "followeeId": "34"])
        for bad in [#"["followerId","1"]"#, #"{"followerId":"1""#, #"{"followerId":"1"} x"#, "", #""text""#] {
            #expect(RawJSON(unchecked: Array(bad.utf8)).strings(named: ["followerId"]) == nil, "\(bad)")
        }
    }
}
