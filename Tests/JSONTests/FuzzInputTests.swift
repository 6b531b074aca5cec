import Foundation
import JSONOracle
import Testing

/// The fuzz target `JSONFuzz` (deploy/local/fuzz.sh) checks arbitrary bytes against Foundation's
/// decoder. Its seeds (`Fuzz/Corpus/json`) and every input it ever crashed on
/// (`Fuzz/Regressions/json`) are replayed here on each test run by the fuzzer's own rule
/// (`JSONOracle`), every type at any depth: the wire decoder accepts what Foundation's accepts,
/// with the same value, and refuses what it refuses; the scanner splits as Foundation reads.
@Suite("Fuzz inputs, replayed")
struct FuzzInputTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func inputs(_ folder: String) -> [String] {
        let url = root.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return names.sorted().map { "\(folder)/\($0)" }
    }

    @Test(arguments: inputs("Corpus/json") + inputs("Regressions/json"))
    func decodesAsFoundationDecodes(input: String) throws {
        let json = try Data(contentsOf: Self.root.appendingPathComponent(input))
        #expect(throws: Never.self) { try JSONOracle.check(json, everyTypeAtAnyDepth: true) }
    }
}
