import Foundation
import Testing

@testable import AviaryJSON

@Suite("Encoding JSON for the wire")
struct WireEncodingTests {
    struct Author: Codable, Equatable, Sendable {
        var id: String
        var username: String
        var profileImageUrl: String?
    }

    /// A result shaped like the services' own: nested objects, optionals present and absent, arrays,
    /// a dictionary, dates, numbers at their limits, and hostile text.
    struct Result: Codable, Equatable, Sendable {
        var id: String
        var author: Author
        var replyTo: Author?
        var text: String
        var createdAt: Date
        var updatedAt: Date?
        var likes: Int64
        var small: Int8
        var big: UInt64
        var ratio: Double
        var liked: Bool
        var tags: [String]
        var counts: [String: Int]
        var grid: [[Int]]
        var maybe: [String?]
        var people: [Author]
    }

    static let sample = Result(
        id: "7391", author: Author(id: "1", username: "ada", profileImageUrl: "http://x/media/9"), replyTo: nil,
        text: "'; DROP TABLE tweets; -- \"quoted\" \\ back\u{0}nul\n\t\u{1F}\u{7F} é 😀 \u{202E}rtl \u{2028}",
        createdAt: Date(timeIntervalSince1970: 1_764_064_800.5), updatedAt: nil,
        likes: Int64.min, small: -128, big: UInt64.max, ratio: -1.5e-7, liked: true,
        tags: ["a", "", "#b"], counts: ["x": 1, "y": -2], grid: [[], [1, 2]], maybe: [nil, "m"],
        people: [Author(id: "2", username: "bo", profileImageUrl: nil), Author(id: "3", username: "cy", profileImageUrl: "")])

    /// Foundation's encoding of `value`, or its error, as a value to compare.
    private func foundation<T: Encodable>(_ value: T) -> Outcome {
        Outcome { Array(try JSONCoding.encoder().encode(value)) }
    }

    private func ours<T: Encodable>(_ value: T) -> Outcome {
        Outcome { try WireEncoding.encode(value) }
    }

    /// What an encoding means: the JSON value it wrote (member order aside), or the error.
    enum Outcome: Equatable, CustomStringConvertible {
        case value(JSONValue)
        case error(String)

        init(_ body: () throws -> [UInt8]) {
            do {
                self = .value(try JSONDecoder().decode(JSONValue.self, from: Data(try body())))
            } catch {
                self = .error("\(error)")
            }
        }

        var description: String {
            switch self {
            case .value(let value): "value: \(value)"
            case .error(let error): "error: \(error)"
            }
        }
    }

    @Test func aResultTakesTheFastPathAndMeansWhatFoundationWrites() throws {
        let bytes = try #require(WireEncoder.encode(Self.sample))
        #expect(Outcome { bytes } == foundation(Self.sample))
        #expect(try JSONCoding.decoder().decode(Result.self, from: Data(bytes)) == Self.sample)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix(#"{"id":"7391","author":{"id":"1","#))
    }

    /// Numbers are written as Foundation writes them, to the byte.
    @Test func numbersAreWrittenAsFoundationWritesThem() throws {
        let doubles: [Double] = [1, 0.1, -0.0, 2.5, 100, 1e16, 1e20, 1.5e-7, 1e-5, 123_456_789_012_345_680, .leastNonzeroMagnitude, .greatestFiniteMagnitude]
        #expect(try #require(WireEncoder.encode(doubles)) == Array(try JSONCoding.encoder().encode(doubles)))
        let integers: [Int64] = [0, -1, .min, .max]
        #expect(try #require(WireEncoder.encode(integers)) == Array(try JSONCoding.encoder().encode(integers)))
        let narrow = [UInt8.max]
        #expect(try #require(WireEncoder.encode(narrow)) == Array(try JSONCoding.encoder().encode(narrow)))
    }

    /// A JSON tree written directly means what the encoder writes for it, numbers to the byte.
    @Test func aTreeWrittenDirectlyMeansWhatTheEncoderWrites() throws {
        let tree: JSONValue = [
            "text": "quote \" backslash \\ newline \n tab \t bell \u{7} é 🐦", "n": .int(.min), "x": .double(0.1),
            "tiny": .double(1.5e-7), "flags": [true, false, nil], "nested": ["a": [], "b": [:]],
        ]
        let direct = try #require(tree.jsonBytes)
        #expect(try JSONCoding.decoder().decode(JSONValue.self, from: Data(direct)) == tree)
        let doubles: [Double] = [1, 0.1, -0.0, 2.5, 1e16, 1e20, 1.5e-7, .greatestFiniteMagnitude]
        #expect(try #require(JSONValue.array(doubles.map { .double($0) }).jsonBytes) == Array(try JSONCoding.encoder().encode(doubles)))
        #expect(JSONValue.array([.double(.nan)]).jsonBytes == nil)
    }

    /// Raw JSON inside a value is copied in as it is.
    @Test func rawJSONIsSplicedIn() throws {
        struct Page: Encodable { var items: RawJSON; var next: String? }
        let items = RawJSON(unchecked: Array(#"[{"id":"1","text":"a\u00e9"} , 2]"#.utf8))
        let bytes = try #require(WireEncoder.encode(Page(items: items, next: nil)))
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"items":[{"id":"1","text":"a\u00e9"} , 2]}"#)
    }

    /// A type that writes its own containers, nested and in turn, as a hand-written `encode(to:)`
    /// may, takes the fast path too.
    @Test func handWrittenContainersTakeTheFastPath() throws {
        struct Custom: Encodable {
            func encode(to encoder: any Encoder) throws {
                var outer = encoder.container(keyedBy: AnyKey.self)
                var list = outer.nestedUnkeyedContainer(forKey: AnyKey("list"))
                try list.encode(1)
                var inner = list.nestedContainer(keyedBy: AnyKey.self)
                try inner.encodeNil(forKey: AnyKey("none"))
                try list.encode("after")
                try outer.encode(true, forKey: AnyKey("flag"))
            }
        }
        let bytes = try #require(WireEncoder.encode(Custom()))
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"list":[1,{"none":null},"after"],"flag":true}"#)
        #expect(Outcome { bytes } == foundation(Custom()))
    }

    /// Whatever the fast path leaves to Foundation, the caller gets what Foundation gives: the same
    /// value, or the same error.
    @Test func everyOtherCaseIsFoundations() throws {
        struct Floats: Encodable { var f: Float = 1.1 }
        struct Bytes: Encodable { var d = Data([0, 1, 255]) }
        struct Link: Encodable { var u = URL(string: "https://example.com/a?b=c")! }
        struct Money: Encodable { var m = Decimal(string: "12.345")! }
        struct NotFinite: Encodable { var x = Double.nan }
        struct Nothing: Encodable { func encode(to encoder: any Encoder) throws {} }
        struct TwoValues: Encodable {
            func encode(to encoder: any Encoder) throws {
                var single = encoder.singleValueContainer()
                try single.encode(1)
                try single.encode(2)
            }
        }
        struct Super: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: AnyKey.self)
                try container.encode(1, forKey: AnyKey("a"))
                try "s".encode(to: container.superEncoder())
            }
        }
        /// Writes to a container after a later one was started: Foundation allows it.
        struct OutOfTurn: Encodable {
            func encode(to encoder: any Encoder) throws {
                var outer = encoder.container(keyedBy: AnyKey.self)
                var first = outer.nestedUnkeyedContainer(forKey: AnyKey("first"))
                var second = outer.nestedUnkeyedContainer(forKey: AnyKey("second"))
                try second.encode(2)
                try first.encode(1)
            }
        }
        #expect(WireEncoder.encode(Floats()) == nil)
        #expect(ours(Floats()) == foundation(Floats()))
        #expect(WireEncoder.encode(Bytes()) == nil)
        #expect(ours(Bytes()) == foundation(Bytes()))
        #expect(WireEncoder.encode(Link()) == nil)
        #expect(ours(Link()) == foundation(Link()))
        #expect(WireEncoder.encode(Money()) == nil)
        #expect(ours(Money()) == foundation(Money()))
        #expect(WireEncoder.encode(NotFinite()) == nil)
        #expect(ours(NotFinite()) == foundation(NotFinite()))
        #expect(ours(NotFinite()).description.hasPrefix("error"))
        #expect(WireEncoder.encode(Nothing()) == nil)
        #expect(ours(Nothing()) == foundation(Nothing()))
        #expect(WireEncoder.encode(TwoValues()) == nil)  // Foundation traps on it: a programming error
        #expect(WireEncoder.encode(Super()) == nil)
        #expect(ours(Super()) == foundation(Super()))
        #expect(WireEncoder.encode(OutOfTurn()) == nil)
        #expect(ours(OutOfTurn()) == foundation(OutOfTurn()))
        #expect(ours(OutOfTurn()) == .value(.object(["first": .array([.int(1)]), "second": .array([.int(2)])])))
    }

    /// The wire decoder reads back what the wire encoder writes, hostile text included. An integer
    /// beyond `Int64` (`UInt64.max`), which the tree holds as a double, is left to Foundation.
    @Test func theWireDecoderReadsItBack() throws {
        var sample = Self.sample
        sample.big = UInt64(Int64.max)
        let bytes = try WireEncoding.encode(sample)
        #expect(try #require(try WireDecoder.decode(Result.self, from: Data(bytes))) == sample)
        let beyond = try WireEncoding.encode(Self.sample)
        #expect(try WireDecoder.decode(Result.self, from: Data(beyond)) == nil)
        #expect(try WireDecoding.decode(Result.self, from: Data(beyond)) == Self.sample)
    }
}

/// A coding key made of any text.
private struct AnyKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ text: String) { stringValue = text }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
