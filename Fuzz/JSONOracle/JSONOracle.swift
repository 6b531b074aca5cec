import AviaryJSON
import Foundation

/// The rule `JSONFuzz` fuzzes by and `FuzzInputTests` replays its inputs with, for the JSON scanner
/// and the wire decoder against Foundation's decoder: for any bytes, and
/// each of a few types like those the services decode, `WireDecoding.decode` must accept what
/// Foundation's decoder (as `JSONCoding` configures it) accepts, refuse what it refuses, and give
/// the same value (numbers to the bit). The documented differences: the error for a string that
/// escapes a lone surrogate (Foundation's says "not valid JSON", ours names the field), so errors
/// are compared only as errors; and JSON with a key given twice, which ours refuses. The scanner's batch split (`arrayElements`), the splice
/// split (`JSONSplice.elements`) and `RawJSON.strings(named:)` are checked against Foundation's
/// reading of the same text, except where Foundation reads by rules of its own (see
/// `readByFoundationsOwnRules`).
public enum JSONOracle {
    /// Where the wire decoder or the scanner and Foundation part ways, with the input in base64.
    public struct Difference: Error, CustomStringConvertible {
        public let description: String
    }

    /// Throws the first ``Difference`` found in `json`. Text nested deeper than 64 is checked as a
    /// `JSONValue` only, unless `everyTypeAtAnyDepth` (replays of a few inputs can afford it).
    public static func check(_ json: Data, everyTypeAtAnyDepth: Bool = false) throws {
        // A key given twice is ours to refuse, in text the scanner reads as JSON, and only then.
        let twice = read([UInt8](json)).keyGivenTwice && isJSON(json)
        try compare(JSONValue.self, json, keyGivenTwice: twice, same: sameJSON)
        // Foundation's decoder takes time cubic in the nesting to read a `JSONValue` (each failed
        // try of its `init(from:)` makes the coding path anew): seconds for 500 deep under the
        // sanitizer. Deeper text is checked as that one type only, unless asked otherwise.
        guard everyTypeAtAnyDepth || nestingDepth(json) <= 64 else { return }
        try compare([String: JSONValue].self, json, keyGivenTwice: twice) { a, b in sameJSON(.object(a), .object(b)) }
        try compare(Request.self, json, keyGivenTwice: twice)
        try compare(Params.self, json, keyGivenTwice: twice)
        try compare(LenientParams.self, json, keyGivenTwice: twice)
        try compare([String: Int].self, json, keyGivenTwice: twice)
        try compare([Int8].self, json, keyGivenTwice: twice)
        try compare([UInt64].self, json, keyGivenTwice: twice)
        try compare([Double].self, json, keyGivenTwice: twice)
        try compare([[String: [Int64?]]].self, json, keyGivenTwice: twice)
        try compare(String.self, json, keyGivenTwice: twice)
        try compareBatchSplit(json)
        try compareNamedStrings(json)
    }

    // MARK: - Decoding

    /// Both decoders accept, with the same value, or both refuse; ours alone refuses, and for that,
    /// where `keyGivenTwice`.
    static func compare<T: Decodable & Equatable & Encodable>(_ type: T.Type, _ json: Data, keyGivenTwice: Bool) throws {
        try compare(type, json, keyGivenTwice: keyGivenTwice) { a, b in a == b && bits(a) == bits(b) }
    }

    static func compare<T: Decodable>(_ type: T.Type, _ json: Data, keyGivenTwice: Bool, same: (T, T) -> Bool) throws {
        let foundation = Result { try JSONCoding.decoder().decode(type, from: json) }
        let ours = Result { try WireDecoding.decode(type, from: json) }
        let refusedForIt: Bool
        if case .failure(DecodingError.dataCorrupted(let context)) = ours {
            refusedForIt = context.debugDescription == WireDecoding.keyGivenTwice
        } else {
            refusedForIt = false
        }
        guard keyGivenTwice == refusedForIt else {
            throw mismatch(type, json, keyGivenTwice ? "a key given twice is not refused: \(ours)" : "refused for a key given twice")
        }
        if keyGivenTwice { return }
        switch (foundation, ours) {
        case (.success(let expected), .success(let got)):
            guard same(expected, got) else { throw mismatch(type, json, "Foundation: \(expected)\nours: \(got)") }
        case (.failure, .failure): break
        case (.success(let expected), .failure(let error)):
            throw mismatch(type, json, "Foundation accepts: \(expected)\nours refuses: \(error)")
        case (.failure(let error), .success(let got)):
            throw mismatch(type, json, "Foundation refuses: \(error)\nours accepts: \(got)")
        }
    }

    /// Whether the scanner reads `json` as one JSON value.
    static func isJSON(_ json: Data) -> Bool {
        json.withUnsafeBytes { bytes in
            var scanner = JSONScanner(bytes)
            return (try? scanner.skipValue(depth: 0)) != nil && (try? scanner.expectEnd()) != nil
        }
    }

    static func mismatch(_ type: Any.Type, _ json: Data, _ detail: String) -> Difference {
        Difference(description: "WireDecoding and Foundation differ on \(type) for \(String(decoding: json, as: UTF8.self).debugDescription) (\(json.base64EncodedString())):\n\(detail)")
    }

    /// Equal as Foundation's encoder writes them, sorted: `-0` is not `0`, unlike `==` on a Double.
    static func bits<T: Encodable>(_ value: T) -> Data? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try? encoder.encode(value)
    }

    /// `==` on `JSONValue`, but a double's bits too (`-0.0 != 0.0`).
    static func sameJSON(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.double(let x), .double(let y)): x.bitPattern == y.bitPattern
        case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy(sameJSON)
        case (.object(let x), .object(let y)):
            x.count == y.count && x.allSatisfy { member in y[member.key].map { sameJSON(member.value, $0) } ?? false }
        default: a == b
        }
    }

    /// How deep the arrays and objects of `json` nest, strings aside; for text that is no JSON too.
    static func nestingDepth(_ json: Data) -> Int {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for byte in json {
            if inString {
                if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
                continue
            }
            switch byte {
            case 0x22: inString = true
            case 0x5B, 0x7B:
                depth += 1
                deepest = max(deepest, depth)
            case 0x5D, 0x7D: depth = max(0, depth - 1)
            default: break
            }
        }
        return deepest
    }

    // MARK: - Splitting

    /// Whether Foundation's decoder may read `bytes` by rules of its own, which RFC 8259 and the
    /// scanner do not have (each found by this fuzzer): a comma before a `]` or `}` (`[1,]`,
    /// `{"a":1,}`); a byte order mark, or UTF-16 or UTF-32 text; and a key given twice, as the
    /// value Foundation drops is never checked (raw control characters in its strings, `04` as
    /// a number). The wire decoder leaves such text to Foundation's (a key given twice it refuses
    /// when the text is JSON), but the RPC router, which splits a batch with the scanner, refuses
    /// `[{…},]`. Only the checks of the scanner's own readers pass over such text.
    static func readByFoundationsOwnRules(_ bytes: [UInt8]) -> Bool {
        let reading = read(bytes)
        return reading.byOwnRules || reading.keyGivenTwice
    }

    /// What a reading of `bytes` of its own (not the scanner's) finds: text only Foundation's
    /// rules read (a byte order mark, UTF-16 or UTF-32, a comma before a `]` or `}`), and an object
    /// with a key twice (keys compared as Swift's strings).
    static func read(_ bytes: [UInt8]) -> (byOwnRules: Bool, keyGivenTwice: Bool) {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) || bytes.first == 0xFE || bytes.first == 0xFF || bytes.prefix(4).contains(0) {
            return (true, false)
        }
        var found: (byOwnRules: Bool, keyGivenTwice: Bool) = (false, false)
        /// The keys of each object being read, innermost last (nil for an array), and whether a
        /// string there now would be a key.
        var objects: [Set<String>?] = []
        var expectingKey = false
        var stringStart: Int?
        var escaped = false
        var comma = false
        for (index, byte) in bytes.enumerated() {
            if let start = stringStart {
                if escaped {
                    escaped = false
                } else if byte == 0x5C {
                    escaped = true
                } else if byte == 0x22 {
                    stringStart = nil
                    guard expectingKey, var keys = objects.last ?? nil else { continue }
                    let key: String? = bytes[start...index].withUnsafeBytes { raw in
                        var scanner = JSONScanner(raw)
                        return try? scanner.string()
                    }
                    if let key, !keys.insert(key).inserted { found.keyGivenTwice = true }
                    objects[objects.count - 1] = keys
                    expectingKey = false
                }
                continue
            }
            switch byte {
            case 0x5D, 0x7D:
                if comma { found.byOwnRules = true }
                _ = objects.popLast()
                expectingKey = false
            case 0x5B:
                objects.append(nil)
                expectingKey = false
            case 0x7B:
                objects.append([])
                expectingKey = true
            case 0x2C: expectingKey = objects.last.map { $0 != nil } ?? false
            case 0x20, 0x0A, 0x0D, 0x09: continue
            case 0x22: stringStart = index
            default: break
            }
            comma = byte == 0x2C
        }
        return found
    }

    /// A batch that Foundation reads as an array is split by the scanner (as the RPC router splits
    /// a batch) and by `JSONSplice` into the same elements, each of which Foundation reads as the
    /// array's element. The scanner may refuse more only by nesting at Foundation's limit.
    static func compareBatchSplit(_ json: Data) throws {
        let bytes = [UInt8](json)
        guard let array = try? JSONCoding.decoder().decode([JSONValue].self, from: json), !readByFoundationsOwnRules(bytes) else { return }
        let scanned = bytes.withUnsafeBytes { raw -> Result<[Range<Int>], JSONScanner.Failure> in
            var scanner = JSONScanner(raw)
            return Result { () throws(JSONScanner.Failure) in try scanner.arrayElements() }
        }
        let elements: [Range<Int>]
        switch scanned {
        case .success(let ranges): elements = ranges
        case .failure(.tooDeep): return
        case .failure(let failure): throw mismatch([JSONValue].self, json, "Foundation reads an array, the scanner refuses it: \(failure)")
        }
        guard elements.count == array.count else {
            throw mismatch([JSONValue].self, json, "the scanner splits \(elements.count) elements, Foundation reads \(array.count)")
        }
        for (range, expected) in zip(elements, array) {
            guard let element = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(bytes[range])),
                sameJSON(element, expected)
            else {
                throw mismatch([JSONValue].self, json, "the scanner's element \(range) is not Foundation's \(expected)")
            }
        }
        guard let spliced = JSONSplice.elements(of: bytes), spliced == elements else {
            throw mismatch([JSONValue].self, json, "JSONSplice splits \(String(describing: JSONSplice.elements(of: bytes))), the scanner \(elements)")
        }
    }

    /// The keys `RawJSON.strings(named:)` is asked for here.
    static let namedKeys = ["id", "method", "a", "", "é"]

    /// For an object Foundation reads (each key once), `RawJSON.strings(named:)` picks out exactly
    /// its string members of those names.
    static func compareNamedStrings(_ json: Data) throws {
        let bytes = [UInt8](json)
        guard let object = try? JSONCoding.decoder().decode([String: JSONValue].self, from: json), !readByFoundationsOwnRules(bytes)
        else { return }
        guard let picked = RawJSON(unchecked: bytes).strings(named: namedKeys) else {
            // Nesting at Foundation's limit aside, the scanner reads every object Foundation reads.
            if bytes.filter({ $0 == 0x5B || $0 == 0x7B }).count < JSONScanner.maximumDepth {
                throw mismatch([String: String].self, json, "Foundation reads an object, strings(named:) nothing")
            }
            return
        }
        var keys: [String] = []
        bytes.withUnsafeBytes { raw in
            var scanner = JSONScanner(raw)
            try? scanner.object(depth: 0) { (key, scanner: inout JSONScanner) throws(JSONScanner.Failure) in
                keys.append(key)
                try scanner.skipValue(depth: 1)
            }
        }
        guard Set(keys).count == keys.count else { return }  // which of a key's values wins is Foundation's affair
        var expected: [String: String] = [:]
        for key in namedKeys {
            if case .string(let text) = object[key] { expected[key] = text }
        }
        guard picked == expected else { throw mismatch([String: String].self, json, "strings(named:) \(picked), Foundation \(expected)") }
    }
}

// MARK: - Types like the services'

/// A JSON-RPC request's envelope.
struct Request: Codable, Equatable {
    var jsonrpc: String
    var method: String
    var id: JSONValue?
    var params: JSONValue?
}

struct Inner: Codable, Equatable {
    var name: String
    var tags: [String]?
}

/// Params shaped like the services' own (as in `WireDecodingTests`), with a date and an unsigned number.
struct Params: Codable, Equatable {
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
struct Lenient: Codable, Equatable {
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

struct LenientParams: Codable, Equatable {
    var a: Lenient
    var b: [Lenient]?
}
