import Foundation
import Testing

@testable import AviaryJSON

/// The fuzz target `JSONFuzz` (deploy/local/fuzz.sh) checks arbitrary bytes against Foundation's
/// decoder. Its seeds (`Fuzz/Corpus/json`) and every input it ever crashed on
/// (`Fuzz/Regressions/json`) are replayed here on each test run, with the same rule: the wire
/// decoder accepts what Foundation's accepts, with the same value, and refuses what it refuses.
@Suite("Fuzz inputs, replayed")
struct FuzzInputTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func inputs(_ folder: String) -> [String] {
        let url = root.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return names.sorted().map { "\(folder)/\($0)" }
    }

    struct Inner: Codable, Equatable, Sendable {
        var name: String
        var tags: [String]?
    }

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
        var at: Date?
        var big: UInt64?
    }

    /// A type whose decoding catches a failure and goes on another way, as a wire type may.
    struct Lenient: Codable, Equatable, Sendable {
        var value: String

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                value = "text:" + text
            } else if let number = try? container.decode(Int.self) {
                value = "int:\(number)"
            } else if let list = try? container.decode([Lenient].self) {
                value = "list:" + list.map(\.value).joined(separator: ",")
            } else {
                value = "other"
            }
        }
    }

    struct LenientParams: Codable, Equatable, Sendable {
        var a: Lenient
        var b: [Lenient]?
    }

    /// What a decoder makes of `json`: the value as Foundation's encoder writes it (sorted keys,
    /// so `-0` is not `0`), or only that it failed (the error for a lone surrogate differs by
    /// design, see `WireDecoding`).
    private func outcome<T: Codable>(_ decode: () throws -> T) -> String {
        guard let value = try? decode() else { return "refused" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "\(value)"
    }

    private func same<T: Codable & Equatable>(_ type: T.Type, _ json: Data) -> Bool {
        let ours = Result { try WireDecoding.decode(type, from: json) }
        let foundation = Result { try JSONCoding.decoder().decode(type, from: json) }
        switch (ours, foundation) {
        case (.success(let a), .success(let b)): return a == b && outcome { a } == outcome { b }
        case (.failure, .failure): return true
        default: return false
        }
    }

    @Test(arguments: inputs("Corpus/json") + inputs("Regressions/json"))
    func decodesAsFoundationDecodes(input: String) throws {
        let json = try Data(contentsOf: Self.root.appendingPathComponent(input))
        #expect(same(JSONValue.self, json))
        #expect(same([String: JSONValue].self, json))
        #expect(same(Params.self, json))
        #expect(same(LenientParams.self, json))
        #expect(same([String: Int].self, json))
        #expect(same([Int8].self, json))
        #expect(same([UInt64].self, json))
        #expect(same([Double].self, json))
        #expect(same([[String: [Int64?]]].self, json))
        #expect(same(String.self, json))
    }
}
